#!/usr/bin/env bash
# The path from paratune's argument files to the training program's argv, for every model preset x every
# supported framework version (and fixed layouts that reach the special forms): emit_cases writes the files a plan
# directory would hold; each shipped example batch script in etc/examples runs under real bash with the plugin's
# variables set, `srun` running its command in place and the real `paratune run`, and the launched program
# (torchrun, nemo) records the argv it received; check_argv.py parses that argv with the frameworks' own parsers
# rebuilt from tests/contracts/*.json (argparse definitions, Megatron's _eval_pattern and layout checks, NeMo-Run's
# override parser, torchtitan's CLI and TOML, torchrun's parser) and compares the parsed values with the plan.
# Also: `mapfile -t A <<<"$PARATUNE_ARGS_TEXT"` (the documented reading on a node without the plan directory)
# gives the same argv as the file.
#
#   argv_path_test.sh EMIT_CASES PARATUNE SOURCE_DIR [EXAMPLES_DIR]
set -euo pipefail
emit=$(realpath "$1") paratune=$(realpath "$2") src=$(realpath "$3")
examples=$(realpath "${4:-$src/etc/examples}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$emit" "$work/cases"

# The launched programs record their argv (NUL-separated, program name first) in $CAPTURE; srun runs in place.
mkdir -p "$work/bin" "$work/run"
printf '#!/bin/bash\nexec "$@"\n' > "$work/bin/srun"
for prog in torchrun nemo; do
  printf '#!/bin/bash\nprintf "%%s\\0" "%s" "$@" > "$CAPTURE"\n' "$prog" > "$work/bin/$prog"
done
chmod +x "$work/bin/"*
ln -s "$paratune" "$work/bin/paratune"
# A file an unquoted $(cat FILE) would glob-expand --moe-layer-freq's pattern into (the launch must not).
touch "$work/run/(03+158)"

example_of() {
  case $1 in
    megatron) echo megatron-lm.sbatch ;; nemo) echo nemo2.sbatch ;; deepspeed) echo deepspeed.sbatch ;;
    torchtitan) echo torchtitan.sbatch ;; fsdp) echo fsdp.sbatch ;; automodel) echo automodel.sbatch ;;
  esac
}

failures=0 launched=0 text_checked=0
for dir in "$work"/cases/*/; do
  dir=${dir%/}
  read -r framework version args_file nodes < "$dir/launch.env"
  args_text=$(cat "$dir/args_text")
  log="$dir/launch.log"
  if ! (cd "$work/run" && env PATH="$work/bin:$PATH" CAPTURE="$dir/argv" \
        PARATUNE_PLAN="$dir/plan.json" PARATUNE_ARGS="$dir/$args_file" PARATUNE_ARGS_TEXT="$args_text" \
        PARATUNE_FRAMEWORK="$framework" PARATUNE_FRAMEWORK_VERSION="$version" \
        SLURM_JOB_NUM_NODES="$nodes" SLURM_GPUS_ON_NODE=8 DATA=/data/corpus TOKENIZER=/data/tokenizer CKPT=/data/ckpt \
        MEGATRON=/opt/Megatron-LM MODULE=llama3 CONFIG=llama3_8b RECIPE=/data/recipe.yaml \
        bash "$examples/$(example_of "$framework")" > "$log" 2>&1); then
    echo "FAIL ${dir##*/}: the example failed: $(tail -n 3 "$log")"
    failures=$((failures + 1))
    continue
  fi
  launched=$((launched + 1))
  # The per-line files: $PARATUNE_ARGS_TEXT read with mapfile gives the file's argv.
  case $args_file in
    *.json | *.toml) ;;
    *)
      mapfile -t from_file < "$dir/$args_file"
      mapfile -t from_text <<< "$args_text"
      if [ "${from_file[*]@Q}" != "${from_text[*]@Q}" ]; then
        echo "FAIL ${dir##*/}: mapfile of PARATUNE_ARGS_TEXT differs from the file's"
        failures=$((failures + 1))
      fi
      text_checked=$((text_checked + 1))
      ;;
  esac
done
echo "$launched example launches ran, $text_checked PARATUNE_ARGS_TEXT readings compared"
test "$launched" -ge 300 || { echo "FAIL: only $launched launches (every preset x version expected)"; failures=$((failures + 1)); }

# A preset x version combination may go unplanned only because it does not fit in memory on up to 256 nodes; any
# other reason (a rule refusing what the framework runs) fails.
if ! python3 -c '
import json, sys
bad = {k: v for k, v in json.load(open(sys.argv[1])).items() if not v.startswith("nothing fits in ")}
for k, v in bad.items():
    print("FAIL %s refused for another reason than memory: %s" % (k, v[:300]))
sys.exit(1 if bad else 0)' "$work/cases/refused.json"; then
  failures=$((failures + 1))
fi

python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3  # Debian's, with python3-torch's torchrun parser
"$python" "$(dirname "$0")/check_argv.py" "$work/cases" "$src/tests/contracts" || failures=$((failures + 1))
[ "$failures" -eq 0 ]
