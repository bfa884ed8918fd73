#!/usr/bin/env python3
"""Summarise what spank_facts.so recorded (spank_facts.c) as one "SCENARIO.STEP.FACT=VALUE" line per fact.

    spank_facts.py DIR JOBS_FILE SUBMITTER_UID SUBMITTER_GID

DIR holds the plugin's files (<context>.<pid>); JOBS_FILE maps job ids to scenario names ("JOBID NAME" lines).
Remote processes are grouped by job id and step (batch, extern, interactive, step0, step1, ...); client processes
(srun, sbatch, salloc) by the value they were given with --spank-facts (the scenario name). Values that name this
job, user or run (job id, uid, paths) are replaced by what they stand for, so that two runs, or two Slurm series,
compare line by line.
"""
import os
import re
import sys
from collections import defaultdict

# The job environment variables paratune reads (planner/src/allocation.cpp, plugin/slurm_nodes.h) and a few neighbours.
WATCHED = ["SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE",
           "CUDA_VISIBLE_DEVICES", "SLURM_GPUS", "SLURM_JOB_PARTITION", "SLURM_SUBMIT_DIR", "SLURM_JOB_NODELIST",
           "SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID", "SLURM_JOB_USER", "SLURM_JOB_UID",
           "SLURM_STEP_ID", "SLURM_JOB_SEGMENT_SIZE", "SLURM_TOPOLOGY_ADDR", "SLURM_TOPOLOGY_ADDR_PATTERN",
           # set by one series and not the other (docs/slurm-versions.md)
           "SLURM_JOB_START_TIME", "SLURM_JOB_END_TIME", "SLURM_OOM_KILL_STEP", "SLURM_JOB_GID", "SLURM_JOB_GROUP",
           "SLURM_NODE_ALIASES", "SLURM_WORKING_CLUSTER", "SLURM_MPI_TYPE", "SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0",
           "SLURMD_DEBUG"]
# Values that name this run (times, paths, host:port): only whether they are set is a fact.
RUN_SPECIFIC = {"SLURM_SUBMIT_DIR", "SLURM_JOB_START_TIME", "SLURM_JOB_END_TIME", "SLURM_WORKING_CLUSTER",
                "SLURM_NODE_ALIASES"}
# Variables of the submitting shell (or of ctest) rather than of Slurm, left out of the lists of names.
NOT_SLURMS = {"SPANK_FACTS_SO", "SPANK_FACTS_OTHER_SERIES_SO"}
SPECIAL_STEPS = {0xfffffffb: "batch", 0xfffffffc: "extern", 0xfffffffa: "interactive"}
ERRORS = {3001: "BAD_ARG", 3002: "NOT_TASK", 3007: "NOT_EXECD", 3009: "NOT_AVAIL", 3010: "NOT_LOCAL",
          3006: "NOT_REMOTE", 3000: "ERROR"}


def parse(path):
    """[(callback, euid, items{}, env{}, opts[])] in the order the callbacks ran."""
    records = []
    opts_before = []
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("== "):
            name, euid = re.match(r"== (\S+) euid=(\d+)", line).groups()
            records.append({"cb": name, "euid": int(euid), "items": {}, "env": {}, "opts": []})
        elif line.startswith("opt "):
            m = re.match(r"opt remote=(\d) value=(.*)", line)
            (records[-1]["opts"] if records else opts_before).append((int(m.group(1)), m.group(2)))
        elif line.startswith("item ") and records:
            k, v = line[5:].split("=", 1)
            records[-1]["items"][k] = v
        elif line.startswith("env ") and records:
            k, _, v = line[4:].partition("=")
            records[-1]["env"][k] = v
    return records


def normalise(value, job, user, key=""):
    """Error codes by name; the job id, uid and gid (only where the fact is that id) by what they stand for."""
    uid, gid = user
    if value.startswith("ERR "):
        code = int(value[4:])
        return "ERR:" + ERRORS.get(code, str(code))
    if key in ("S_JOB_ID", "SLURM_JOB_ID", "S_JOB_ARRAY_ID") and job and value == job:
        return "<jobid>"
    if key in ("S_JOB_UID", "SLURM_JOB_UID") and value == str(uid):
        return "<uid>"
    if key in ("S_JOB_GID", "SLURM_JOB_GID") and value == str(gid):
        return "<gid>"
    if key in RUN_SPECIFIC:
        return "<set>"
    return value


def order(records):
    seq = []
    for r in records:
        seq.append(r["cb"])
        seq += ["opt" for _ in r["opts"]]
    return ",".join(seq)


def summarise(records, prefix, job, user, out):
    """user: (uid, gid) of the job's user."""
    uid = user[0]
    out.append(f"{prefix}.callbacks={order(records)}")
    opts = [f"remote={o[0]}:{o[1]}" for r in records for o in r["opts"]]
    out.append(f"{prefix}.option_calls={';'.join(opts) if opts else 'none'}")
    for r in records:
        cb = r["cb"]
        if cb in ("task_exit", "slurmd_exit"):
            for k, v in r["items"].items():
                out.append(f"{prefix}.{cb}.item.{k}={normalise(v, job, user, k)}")
            continue
        out.append(f"{prefix}.{cb}.euid={'root' if r['euid'] == 0 else ('user' if r['euid'] == uid else r['euid'])}")
        for k, v in sorted(r["items"].items()):
            out.append(f"{prefix}.{cb}.item.{k}={normalise(v, job, user, k)}")
        if not r["env"]:
            continue
        for k in WATCHED:
            v = r["env"].get(k)
            out.append(f"{prefix}.{cb}.env.{k}={'(unset)' if v is None else normalise(v, job, user, k)}")
        names = sorted(n for n in r["env"] if n not in NOT_SLURMS and (
            n.startswith(("SLURM_", "SLURMD_", "SPANK_", "_SLURM")) or n in ("CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")))
        out.append(f"{prefix}.{cb}.env_names={' '.join(names)}")


def main():
    directory, jobs_file = sys.argv[1], sys.argv[2]
    submitter = (int(sys.argv[3]), int(sys.argv[4]))
    jobs = {}
    for line in open(jobs_file):
        if line.strip():
            job, name = line.split()
            jobs[job] = name
    uid = submitter
    out = []
    groups = defaultdict(list)
    for f in sorted(os.listdir(directory)):
        context = f.split(".")[0]
        records = parse(os.path.join(directory, f))
        if not records:
            continue
        first = records[0]["items"]
        if context == "remote":
            job = first.get("S_JOB_ID", "")
            step = int(first.get("S_JOB_STEPID", "0").split()[0]) if not first.get("S_JOB_STEPID", "").startswith("ERR") else -1
            kind = SPECIAL_STEPS.get(step, f"step{step}")
            groups[(jobs.get(job, "job?"), kind)].append((records, job, uid))
        elif context in ("local", "allocator"):
            opts = [o[1] for r in records for o in r["opts"]]
            name = opts[-1] if opts else "unnamed"  # srun in a job also gets the job's option first
            groups[(name, context)].append((records, None, uid))
        else:
            groups[("daemon", context)].append((records, None, uid))
    for (scenario, kind), members in sorted(groups.items()):
        # Several processes of one kind (e.g. one slurmstepd per node): each is summarised; they must agree.
        seen = set()
        for records, job, juid in members:
            lines = []
            summarise(records, f"{scenario}.{kind}", job, juid, lines)
            key = "\n".join(lines)
            if key not in seen:
                seen.add(key)
                out += lines
    print("\n".join(out))


if __name__ == "__main__":
    main()
