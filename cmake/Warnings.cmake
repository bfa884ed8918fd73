# One place for the warning policy: every target of ours calls paratune_warnings().
function(paratune_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wshadow=local -Wnon-virtual-dtor)
endfunction()
