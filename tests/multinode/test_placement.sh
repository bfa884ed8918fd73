#!/usr/bin/env bash
# Allocation-aware planning on topology.conf's two leaf switches (leaf0: mn0, mn1; leaf1: mn2, mn3), with a site
# policy saying 8:1 oversubscription above the leaves. The same job on mn[0-1] (one leaf) and on mn[1-2] (two
# leaves) gets different plans, the second explained ("placement changed the plan", with what one switch would have
# got); the plan file and PARATUNE_NODE_ORDER say which nodes form which groups. Positive control: with the default
# (non-blocking) the two placements get the same plan.
source "$(dirname "$0")/lib.sh"
POLICY=$PARATUNE_MN_DIR/etc/placement-policy.toml
printf '[defaults.facts]\nleaf_oversubscription = 8\n' > "$POLICY"; chmod 0644 "$POLICY"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
env | grep -E '^PARATUNE_' | sort > batch-$SLURM_JOB_ID.env
JOB
SPEC=${PARATUNE_MN_PLACEMENT_SPEC:-llama3-8b,gbs=64}
layout() { local f=$WORK/batch-$1.env; echo "tp=$(env_value "$f" PARATUNE_TP) pp=$(env_value "$f" PARATUNE_PP) dp=$(env_value "$f" PARATUNE_DP)"; }
plan_of() { env_value "$WORK/batch-$1.env" PARATUNE_PLAN; }

plugstack "${BASE_ARGS[@]}" "policy=$POLICY"
one=$(run_batch "$WORK/job.sh" -N2 -w 'mn[0-1]' --gpus-per-node=8 --paratune="$SPEC")
two=$(run_batch "$WORK/job.sh" -N2 -w 'mn[1-2]' --gpus-per-node=8 --paratune="$SPEC")
echo "one leaf: job $one $(layout "$one"); two leaves: job $two $(layout "$two")"
check "both jobs have a plan" test -n "$(env_value "$WORK/batch-$one.env" PARATUNE_TP)" -a -n "$(env_value "$WORK/batch-$two.env" PARATUNE_TP)"
check "the two placements get different layouts" test "$(layout "$one")" != "$(layout "$two")"
check "one leaf: the plan file places both nodes under leaf0" python3 -c "
import json,sys; p=json.load(open(sys.argv[1]))['placement']
assert p['node_order']==['mn0','mn1'] and set(p['leaf_switch'].values())=={'leaf0'} and p['oversubscription']==8, p" "$(plan_of "$one")"
check "two leaves: node order leaf by leaf, and the groups spanning nodes named" python3 -c "
import json,sys; j=json.load(open(sys.argv[1])); p=j['placement']
assert p['node_order']==['mn1','mn2'] and p['leaf_switch']=={'mn1':'leaf0','mn2':'leaf1'}, p
assert any(k in p['groups'] for k in ('dp','pp','cp','tp')), p['groups']
for k,groups in p['groups'].items():
    if k.endswith('_more'): continue
    assert all(set(g)<= {'mn1','mn2'} for g in groups), groups" "$(plan_of "$two")"
check "two leaves: the plan says the placement changed it, and what one switch would have got" python3 -c "
import json,sys; j=json.load(open(sys.argv[1])); one=sys.argv[2]
notes=[n for n in j['notes'] if n.startswith('placement changed the plan')]
assert notes and ('would be '+one) in notes[0], (one, j['notes'])" "$(plan_of "$two")" "$(layout "$one")"
check "one leaf: no such note" python3 -c "
import json,sys; j=json.load(open(sys.argv[1])); assert not any('changed the plan' in n for n in j['notes']), j['notes']" "$(plan_of "$one")"
check "PARATUNE_NODE_ORDER is the plan's node order" test "$(env_value "$WORK/batch-$two.env" PARATUNE_NODE_ORDER)" = "mn1,mn2"
check "the plan directory has the hostfile in that order" test "$(cat "$(dirname "$(plan_of "$two")")/hostfile" | tr '\n' ,)" = "mn1,mn2,"

# Positive control: the default (non-blocking) leaves the two placements alike.
plugstack "${BASE_ARGS[@]}"
one=$(run_batch "$WORK/job.sh" -N2 -w 'mn[0-1]' --gpus-per-node=8 --paratune="$SPEC")
two=$(run_batch "$WORK/job.sh" -N2 -w 'mn[1-2]' --gpus-per-node=8 --paratune="$SPEC")
check "default oversubscription 1: the same layout under one leaf and across two" test "$(layout "$one")" = "$(layout "$two")"
check "default: the plan file records oversubscription 1" python3 -c "
import json,sys; assert json.load(open(sys.argv[1]))['placement']['oversubscription']==1" "$(plan_of "$two")"
finish
