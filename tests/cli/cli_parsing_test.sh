#!/usr/bin/env bash
# The `paratune` command line (CLI11, cli/app.cpp): the same help, errors, --version and exit codes for every
# command, and a bash completion script generated from the same option tree that completes what the help lists.
# Exit codes are the README's: 0 ok, 1 failure, 2 bad input naming the option, 3 nothing fits.
set -uo pipefail
cli=$1
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures+1)); }
pass() { echo "ok: $*"; }
# expect RC PATTERN ARGS...: exit status RC and PATTERN (grep -E) in stdout+stderr.
expect() {
  local rc=$1 pattern=$2; shift 2
  local out got=0
  out=$("$cli" "$@" 2>&1) || got=$?
  if [ "$got" -ne "$rc" ]; then fail "paratune $*: exit $got, wanted $rc: $out"; return; fi
  if ! grep -Eq -- "$pattern" <<<"$out"; then fail "paratune $*: no /$pattern/ in: $out"; return; fi
  pass "paratune $* -> $rc /$pattern/"
}

cat > "$dir/s.toml" <<'TOML'
[model]
preset = "llama3-8b"
[training]
global_batch = 64
[cluster]
gpu = "a100-sxm4-80gb"
nodes = 1
gpus_per_node = 8
nvlink_domain = 8
nic_count = 4
nic_gbps = 200
TOML
# 175B parameters on one 80 GB GPU: no layout fits.
cat > "$dir/huge.toml" <<'TOML'
[model]
preset = "gpt3-175b"
[training]
global_batch = 8
[cluster]
gpu = "a100-sxm4-80gb"
nodes = 1
gpus_per_node = 1
nvlink_domain = 1
nic_count = 0
nic_gbps = 0
TOML

# --- top level ------------------------------------------------------------------------------------------------
expect 2 "Subcommands:" 
expect 0 "^paratune [0-9][^ ]* \(built for Slurm [0-9]+\.[0-9]+\.[0-9]+\)$" --version
expect 0 "^paratune [0-9][^ ]* \(built for Slurm" version
expect 2 "unknown command 'frobnicate'; valid: advise, calibrate, completion, explain, index, log, measure, policy, portability, predict, probe, run, summary" frobnicate
expect 2 "unknown option '--bogus'; valid: --help, --version" --bogus
help=$("$cli" --help)
commands=$(sed -n 's/^  \([a-z]*\)  .*/\1/p' <<<"$help")
[ "$(wc -w <<<"$commands")" -ge 10 ] && pass "--help lists $(wc -w <<<"$commands") commands" || fail "--help lists: $commands"

# --- every command: the same help layout, the same as `paratune help COMMAND` ------------------------------------
"$cli" completion bash > "$dir/completion.bash" || fail "completion bash"
for c in $commands; do
  [ "$c" = help ] && continue
  out=$("$cli" "$c" --help 2>&1); rc=$?
  [ $rc -eq 0 ] && grep -q "^Usage: paratune $c " <<<"$out" && grep -q "exit status" <<<"$out" \
    && pass "$c --help: usage and exit status" || fail "$c --help (exit $rc): $out"
  [ "$out" = "$("$cli" help "$c")" ] && pass "help $c = $c --help" || fail "help $c differs from $c --help"
  # Every option the completion offers for the command is one its help documents (one tree, two views).
  opts=$(sed -n "s/^    \"$c\") subs=\"[^\"]*\"; opts=\"\([^\"]*\)\".*/\1/p" "$dir/completion.bash")
  [ -n "$opts" ] || fail "completion has no entry for $c"
  for o in $opts; do grep -q -- "$o[ ,=]" <<<"$out" || fail "$c: completion offers $o, --help does not show it"; done
done
expect 0 "Usage: paratune policy check \[OPTIONS\] FILE" help policy check
expect 2 "no command 'nope'" help nope

# --- bad input: exit 2, the message names the option and what is valid ------------------------------------------
expect 2 "^paratune advise: give --scenario FILE, or --paratune SPEC" advise
expect 2 "^paratune advise: unknown option '--bogus'; valid: --help, --scenario, --top" advise -s "$dir/s.toml" --bogus
expect 2 "^paratune advise: --top: expected an integer 0..1000, got 'x'" advise -s "$dir/s.toml" --top x
expect 2 "^paratune advise: --top: expected an integer 0..1000, got '1001'" advise -s "$dir/s.toml" --top=1001
expect 2 "^paratune explain: --framework-args: 'jax' is not a framework; valid: megatron" explain -s "$dir/s.toml" --framework-args fsdp,jax
expect 2 "^paratune advise: --partition requires --policy" advise -s "$dir/s.toml" --partition a
expect 2 "^paratune advise: --scenario: 1 required FILE missing" advise --scenario
# --paratune SPEC (the job's plan): its options need it, it excludes --scenario, the SPEC's own errors name the key.
expect 2 "^paratune advise: --scenario excludes --paratune" advise -s "$dir/s.toml" --paratune llama3-8b
expect 2 "^paratune advise: --nodes requires --paratune" advise -s "$dir/s.toml" --nodes 2
expect 2 "^paratune advise --paratune: .*bogus" advise --paratune llama3-8b,bogus=1 --topology builtin:nvidia-dgx2
expect 2 "^paratune advise --paratune: --topology: give the node's topology" advise --paratune llama3-8b --plugstack "policy=$dir/none"
expect 2 "^paratune advise --paratune: --leaf-switches: 'n1' is not NODE=SWITCH" advise --paratune llama3-8b --topology builtin:nvidia-dgx2 --nodelist n1 --leaf-switches n1
expect 2 "^paratune advise --paratune: --nodelist names 2 nodes, --nodes says 1" advise --paratune llama3-8b --topology builtin:nvidia-dgx2 --nodelist n1,n2
: > "$dir/empty-policy.toml"
expect 0 "PARATUNE_TP=" advise --paratune llama3-8b,gbs=64 --topology builtin:nvidia-dgx2 --gpus-per-node 8 --plugstack "policy=$dir/none-yet calibration=$dir/none" --policy "$dir/empty-policy.toml"
expect 2 "^paratune predict: unexpected argument 'extra'" predict -s "$dir/s.toml" extra
expect 2 "^paratune policy: unknown sub-command 'lint'; valid: check" policy lint x
expect 2 "^paratune policy check: FILE is required" policy check
# Limits that leave every allowed framework no layout are an error (every job there would get "nothing fits");
# leaving some of them none is a warning naming them.
printf '[defaults.limits]\nframeworks = ["torchtitan"]\nzero_stages = [1]\n' > "$dir/nolayout.toml"
expect 2 "error: \[defaults\] limits.zero_stages / limits.recompute leave torchtitan no layout it runs" policy check --draft "$dir/nolayout.toml"
printf '[defaults.limits]\nframeworks = ["fsdp", "megatron"]\nzero_stages = [1]\n' > "$dir/somelayout.toml"
expect 0 "warning: \[defaults\] .* leave fsdp no layout it runs" policy check --draft "$dir/somelayout.toml"
expect 2 "^paratune log: --since: 'yesterday': expected YYYY-MM-DD" log --since yesterday
expect 2 "^paratune log: --threshold: expected a ratio in \[0, 10\] \(0: judge no ratio, as suspect_ratio = 0\), got '-1'" log --threshold -1
expect 2 "^paratune calibrate: --output is required" calibrate --log "$dir/x"
expect 2 "^paratune calibrate: --holdout: expected a fraction between 0 and 1, got '1.5'" calibrate --log x -o y --holdout 1.5
expect 2 "^paratune calibrate: --min-samples: expected an integer 0..1000000000, got '-1'" calibrate --log x -o y --min-samples -1
expect 2 "^paratune probe: --gpus: '0,x': expected GPU indexes like 0,1,2" probe --gpus 0,x
expect 2 "^paratune probe: --topology excludes --fsroot" probe --topology a --fsroot b
expect 2 "^paratune run: --world-size: expected an integer > 0, got '0'" run --world-size 0 -- true
expect 2 "^paratune run: unknown option '--repot'" run --repot x -- true
expect 2 "^paratune run: no command given" run --report "$dir/r"
expect 2 "^paratune completion: shell: zsh not in \{bash\}" completion zsh
expect 2 "^paratune summary: --job: 'x1': expected a Slurm job id" summary --job x1
expect 2 "^paratune summary: --job is required" summary --log "$dir/x"
expect 2 "^paratune portability: --platforms: 'gpu': expected partition/gpu/fabric" portability --platforms gpu
expect 2 "^paratune portability: --scenario requires --policy" portability --scenario "$dir/s.toml"
# A partition where the scenario cannot run at all (FP8 on A100s) counts 0 with the reason, instead of ending the
# what-if (exit 2 without naming the partition); the other partition is still planned.
printf '[partition.a100.facts]\ngpu = "a100-sxm4-80gb"\n[partition.h100.facts]\ngpu = "h100-sxm5-80gb"\n' > "$dir/two.toml"
sed 's/^global_batch = 64/global_batch = 64\nprecision = "fp8"/; s/a100-sxm4-80gb/h100-sxm5-80gb/' "$dir/s.toml" > "$dir/fp8.toml"
expect 0 "a100 .*cannot run there: training.precision: fp8 needs FP8 tensor cores" portability --scenario "$dir/fp8.toml" --policy "$dir/two.toml"
# The dry run says what the plugin would do when nothing fits: fail the step under on_error = "closed".
printf '[defaults]\non_error = "closed"\n[defaults.limits]\nframeworks = ["fsdp"]\nzero_stages = [1]\n' > "$dir/closed.toml"
expect 3 "on_error = \"closed\": the job's step would fail" advise --paratune llama3-8b --topology builtin:nvidia-dgx2 --policy "$dir/closed.toml"
expect 3 "the job would run untouched" advise --paratune llama3.1-405b --topology builtin:nvidia-dgx2
# A file option names a regular file: a directory is refused (not read as an empty file, and not a calibration
# silently ignored), a FIFO is refused at once instead of blocking the command, a missing file says so.
mkfifo "$dir/fifo"
expect 2 "$dir:0:0: scenario: a directory, not a file" advise --scenario "$dir"
expect 2 "$dir/fifo:0:0: scenario: not a regular file" advise --scenario "$dir/fifo"
expect 2 "$dir/none.toml:0:0: scenario: cannot open \(No such file" advise --scenario "$dir/none.toml"
expect 2 "$dir:0:0: calibration: a directory, not a file" advise --scenario "$dir/s.toml" --calibration "$dir"
expect 2 "$dir/fifo:0:0: calibration: not a regular file" advise --scenario "$dir/s.toml" --calibration "$dir/fifo"
expect 2 "$dir:0:0: profile: a directory, not a file" advise --scenario "$dir/s.toml" --profile "$dir"
ln -s "$dir/s.toml" "$dir/link.toml"
expect 0 '"candidates_evaluated"' advise --scenario "$dir/link.toml" --top=1 --json
# Positive controls: the same options with good values are accepted (also as --name=value).
expect 0 '"candidates_evaluated"' advise --scenario="$dir/s.toml" --top=1 --json
expect 0 '"step_time_s"' predict -s "$dir/s.toml" --json
expect 3 "nothing fits" advise --scenario "$dir/huge.toml" --json
# The text plan's framework arguments: every argument line under its file's heading is indented as one block (a
# multi-line launcher block once printed its second and later lines at column 0).
args_block=$("$cli" advise --scenario "$dir/s.toml" --top 0 2>&1 | sed -n '/^framework arguments/,/^  yours:/p')
if ! grep -q -- '--nproc_per_node=' <<<"$args_block"; then fail "advise text: no torchrun block in: $args_block"
elif grep -vE '^(framework arguments|  [a-z.]+:|    -|  yours:)' <<<"$args_block" | grep -q .; then
  fail "advise text: an argument line outside its block: $(grep -vE '^(framework arguments|  [a-z.]+:|    -|  yours:)' <<<"$args_block")"
else pass "advise text: each framework-argument line is indented under its heading"; fi

# --- run: its own exit status; the command line after "--", or from the first word that is not an option --------
expect 5 "" run -- sh -c 'exit 5'
expect 0 "^-x -- y$" run sh -c 'echo "$@"' sh -x -- y
expect 0 "^--report$" run -- echo --report

# --- the completion script ------------------------------------------------------------------------------------
bash -n "$dir/completion.bash" && pass "completion script parses" || fail "completion script does not parse"
mkdir -p "$dir/cwd/confdir" && touch "$dir/cwd/conf.toml"
complete_words() {  # complete_words WORD...: what TAB offers for the last word
  (cd "$dir/cwd" && bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); _paratune; echo "${COMPREPLY[*]}"' _ "$dir/completion.bash" "$@")
}
check_completion() {  # check_completion EXPECTED WORD...
  local want=$1; shift
  local got; got=$(complete_words "$@")
  [ "$got" = "$want" ] && pass "complete '$*' -> '$got'" || fail "complete '$*': got '$got', wanted '$want'"
}
check_completion "advise" paratune adv
check_completion "--scenario" paratune advise --sc
check_completion "conf.toml confdir" paratune advise --scenario con
check_completion "--json" paratune advise --top 3 --js
check_completion "check" paratune policy ""
check_completion "--partition" paratune policy check --pa
check_completion "confdir" paratune probe --fsroot con
check_completion "--report" paratune run --rep
check_completion "" paratune advise --top ""
[[ " $(complete_words paratune run -- ech) " == *" echo "* ]] && pass "run -- completes commands" || fail "run -- ech"
# values: frameworks (also the last item of a comma-separated list), commands, shells
check_completion "megatron deepspeed fsdp torchtitan nemo automodel" paratune advise --framework-args ""
check_completion "fsdp,megatron" paratune explain --framework-args fsdp,me
check_completion "advise" paratune help ad
check_completion "bash" paratune completion ""

# --- `paratune help` is the command list; tables keep their columns; one node is "1 node" ------------------------
[ "$("$cli" help)" = "$("$cli" --help)" ] && grep -q "^  advise  " <<<"$("$cli" help)" \
  && pass "help = --help (the command list)" || fail "help: $("$cli" help | head -3)"
for c in advise explain; do
  out=$("$cli" $c -s "$dir/s.toml" --top 1)
  grep -q "x a100-sxm4-80gb (1 node)" <<<"$out" && ! grep -q "(1 nodes)" <<<"$out" \
    && pass "$c: (1 node)" || fail "$c: $(head -1 <<<"$out")"
done
cat > "$dir/moe.toml" <<'TOML'
[model]
preset = "mixtral-8x22b"
[training]
global_batch = 256
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 8
gpus_per_node = 8
nvlink_domain = 8
nic_count = 8
nic_gbps = 400
TOML
# The ranked table of a MoE plan (layouts with ep, etp and the dispatcher): every row's bar starts in one column.
bars=$("$cli" advise -s "$dir/moe.toml" --top 5 | sed -n '/^  # framework/,/^  bar:/p' | grep -E '^ +[0-9]+ ' \
  | awk '{print index($0, "|")}' | sort -u)
[ "$(wc -l <<<"$bars")" -eq 1 ] && [ "$bars" -gt 0 ] && pass "MoE table: one column for the bars ($bars)" \
  || fail "MoE table columns: $bars"

[ "$failures" -eq 0 ] && echo "cli parsing: ok" || { echo "cli parsing: $failures failed" >&2; exit 1; }
