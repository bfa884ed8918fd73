// The site policy: the administrator's TOML file (/etc/paratune/policy.toml) that has the last word over every
// decision paratune makes, per Slurm partition. Schema and precedence: docs/policy.md and paratune.toml(5).
//
// Flow in the plugin (and in `paratune advise --policy FILE --partition P`):
//   PolicyFile f = load_policy_secure(path);             // root-owned, not group/world-writable, parsed, validated
//   EffectivePolicy p = resolve(f, partition);           // [defaults] refined by [partition.NAME]
//   ModeDecision m = decide_mode(p, request);            // enabled? opt-in/opt-out? which mode?
//   changes += apply_to_scenario(p, scenario);           // fixed facts, user constraints within the limits
//   Plan plan = advisor::advise(scenario, search_limits(p));
//   EnvPlan e = plan_env(p, plan.env);                   // forced / default / forbidden / allow_override
//
// Everything here is pure (no Slurm, no environment access) except load_policy* and check_policy_file_security,
// which read one file. Every function reports problems by throwing PolicyError; nothing else escapes except
// std::bad_alloc.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::policies {

// ---------------------------------------------------------------------------------------------------------------
// Errors

// All problems of one file in one exception: what() has one line per problem, each
//   FILE:LINE:COL: key: problem; valid: ...
// (file-level problems — unreadable, insecure — are "FILE: problem").
struct PolicyError : std::runtime_error {
  enum class Kind {
    Invalid,     // syntax or schema errors (the file is readable but wrong)
    Insecure,    // wrong owner / permissions / not a regular file / a symbolic link
    Missing,     // the file does not exist (ENOENT): the plugin treats an absent default policy as "no policy"
    Unreadable,  // any other I/O problem, or larger than kMaxPolicyBytes
  };
  explicit PolicyError(std::vector<std::string> problems, Kind kind = Kind::Invalid);
  PolicyError(const std::string& problem, Kind kind) : PolicyError(std::vector<std::string>{problem}, kind) {}
  const std::vector<std::string>& problems() const noexcept { return *problems_; }
  Kind kind() const noexcept { return kind_; }

  // What a broken policy means for a job in `partition`: the on_error the file states for it ([partition.NAME],
  // else [defaults]) when that key itself could be read (Kind::Invalid with a valid TOML syntax), else Open.
  // An insecure, missing or unreadable file is never trusted: Open.
  bool fails_closed(const std::string& partition) const noexcept;
  void set_on_error_hints(std::map<std::string, bool> closed_by_partition);  // "" = [defaults]; parser only

 private:
  std::shared_ptr<const std::vector<std::string>> problems_;  // shared: copying an exception must not throw
  std::shared_ptr<const std::map<std::string, bool>> closed_;  // partition ("" = defaults) -> on_error closed
  Kind kind_;
};

inline constexpr std::size_t kMaxPolicyBytes = 1u << 20;  // 1 MiB
inline constexpr const char* kDefaultPolicyPath = "/etc/paratune/policy.toml";

// ---------------------------------------------------------------------------------------------------------------
// Values

// What paratune injects. Ordered: Off < Suggest < Apply (max_mode caps with this order).
enum class Mode { Off, Suggest, Apply };
const char* to_string(Mode m);
Mode mode_from_string(const std::string& s);  // throws std::invalid_argument listing apply, suggest, off

enum class OnError { Open, Closed };  // open: a broken policy/advisor leaves the job untouched; closed: the step fails
const char* to_string(OnError e);

// Facts the admin knows better than the probe; each set one replaces the probe's value in the ClusterSpec.
struct Facts {
  std::optional<std::string> gpu;             // GPU catalog key (advisor::gpu_keys())
  std::optional<double> nic_gbps;             // per compute NIC, Gb/s
  std::optional<int> nic_count;               // compute NICs per node
  std::optional<int> nvlink_domain;           // GPUs sharing NVLink/NVSwitch
  std::optional<advisor::Fabric> fabric;
  std::optional<std::string> nccl_topo_file;  // vendor NCCL topology file (absolute path on the compute node)
  std::optional<bool> nvls;                   // NVLink SHARP usable (false: Fabric Manager broken / not wanted)
  std::optional<bool> rail_aligned;           // the fabric is rail-optimised (one NIC per GPU, each on its own rail)
  // Above each leaf switch of Slurm's topology: downlink / uplink bandwidth (2 = 2:1, half the bandwidth leaves the
  // leaf). Unset: 1, a non-blocking fat tree, so the switch placement of a job changes nothing.
  std::optional<double> leaf_oversubscription;
  // The optional kernels installed on the partition's nodes (DeepEP, HybridEP, Transformer Engine,
  // FlashAttention-3); unset: not stated, nothing is assumed missing. A plan never uses one the list lacks.
  std::optional<std::vector<advisor::Kernel>> kernels;
  // Transformer Engine's version on the nodes ("2.14"): whether its fused loss keeps an fp32 gradient (loss_fusion.h);
  // unset: not stated, the loss is planned as the framework's default.
  std::optional<std::string> te_version;
  // The partition's hardware profile (`paratune measure` output; absolute path on the compute nodes): replaces the
  // plugin's profile= for the partition's jobs, used on nodes of its fingerprint only.
  std::optional<std::string> profile;
};
inline constexpr double kDefaultLeafOversubscription = 1.0;

struct EnvRules {
  std::map<std::string, std::string> force;     // always set; a user's value is replaced
  std::map<std::string, std::string> defaults;  // `default`: set only if the job does not have it
  std::vector<std::string> forbid;              // removed from the job env; never set by paratune
  // Present: only these variables (of those paratune sets) may be overridden by the user; every other variable
  // paratune sets replaces the user's value. Absent: a user's value is always kept (the README rule).
  std::optional<std::vector<std::string>> allow_override;
  // true ("all", the default): force/default/forbid apply to every job on the partition, also jobs without
  // --paratune or with mode=off (the /etc/nccl.conf replacement); false ("paratune"): only to jobs paratune
  // decides for.
  bool all_jobs = true;
};

struct LogSettings {
  std::optional<std::string> tuning_log;  // absolute path; unset = plugstack log_dir/tuning.jsonl
  unsigned file_mode = 0640;              // permission bits of the tuning log (never writable by others)
  std::optional<std::string> group;       // group owning the log (name or numeric gid); unset = root's group
};

// The policy as it applies to one partition: [defaults] refined by [partition.NAME]. Default-constructed = no
// policy at all (nothing changes).
struct EffectivePolicy {
  std::string origin;            // the file ("" = no policy)
  std::string partition;         // what was asked for
  bool partition_matched = false;  // a [partition.NAME] section exists for it

  bool enabled = true;                   // false: paratune does nothing at all for jobs here (env rules included)
  std::optional<Mode> mode;              // the mode when the option does not say; unset = plugstack default_mode
  Mode max_mode = Mode::Apply;           // the most a job may get (a user's mode=apply is lowered to this)
  std::optional<bool> on_by_default;     // decide without --paratune; unset = plugstack on_by_default
  int on_by_default_min_gpus_per_node = 0;  // on_by_default only for jobs with at least this many GPUs per node
  bool users_may_opt_out = true;         // may a user's mode=off switch paratune off
  OnError on_error = OnError::Open;
  double suspect_ratio = 0.7;            // achieved/predicted below this flags the job (and its nodes) as suspect
  advisor::SearchLimits limits;          // only the policy's fields: caps, allowed sets, micro-batch, head-room
  // framework_version = { megatron = "core_v0.14", ... }: the version a job's arguments are for when the user does
  // not name one (SPEC framework_version= or [training] framework_version win); each a framework_versions() id.
  std::map<advisor::Framework, std::string> framework_versions;
  Facts facts;
  EnvRules env;
  LogSettings log;

  // Where each effective setting came from: key ("limits.max_tp", "env.force.NCCL_IB_HCA", "mode", ...) →
  // section ("defaults" or "partition.opa").
  std::map<std::string, std::string> origins;
  // "[partition.opa] limits.max_tp" ("site policy KEY" when the key has no recorded origin).
  std::string where(const std::string& key) const;
};

// Every change the policy makes, phrased for a person: what = "TP capped at 4", reason =
// "[partition.opa] limits.max_tp = 4 (user asked tp=8)". describe() joins them: "WHAT — REASON".
struct PolicyChange {
  std::string what, reason;
};
std::string describe(const PolicyChange& c);

// ---------------------------------------------------------------------------------------------------------------
// The parsed file (all layers, with source positions). Use resolve() rather than reading it directly.

struct SourcePos {
  int line = 0, column = 0;
};

struct PolicyLayer {
  std::string section;  // "defaults" or "partition.NAME"
  std::optional<bool> enabled, on_by_default, users_may_opt_out;
  std::optional<Mode> mode, max_mode;
  std::optional<int> on_by_default_min_gpus_per_node;
  std::optional<OnError> on_error;
  std::optional<double> suspect_ratio;
  // [limits]
  std::optional<int> max_tp, max_pp, max_cp, max_ep, min_micro_batch, max_micro_batch;
  std::optional<std::vector<advisor::Dispatcher>> dispatchers;
  std::optional<std::vector<int>> zero_stages;
  std::optional<std::vector<advisor::Recompute>> recompute;
  std::optional<std::vector<advisor::Framework>> frameworks;
  std::optional<double> memory_headroom_gib;
  // framework_version (merged framework by framework: a partition's entry replaces the default's for that one)
  std::map<advisor::Framework, std::string> framework_versions;
  // [facts]
  Facts facts;
  // [env]
  std::map<std::string, std::string> force, defaults;
  std::vector<std::string> forbid;
  std::optional<std::vector<std::string>> allow_override;
  std::optional<bool> env_all_jobs;
  // [log]
  std::optional<std::string> tuning_log, log_group;
  std::optional<unsigned> log_mode;
  // Position of every key given ("limits.max_tp", "env.force.NCCL_IB_HCA", "env.forbid.NCCL_X", ...).
  std::map<std::string, SourcePos> positions;
};

struct PolicyFile {
  std::string origin;  // the file name used in messages
  PolicyLayer defaults;
  std::map<std::string, PolicyLayer> partitions;  // by partition name
};

// ---------------------------------------------------------------------------------------------------------------
// Loading

// Parse and validate; throws PolicyError (Kind::Invalid) listing every problem found.
PolicyFile parse_policy(std::string_view text, const std::string& origin);

// Read (at most kMaxPolicyBytes) and parse. No ownership check: for `paratune policy check` and tests.
PolicyFile load_policy(const std::string& path);

// The file must be a regular file (not a symbolic link: O_NOFOLLOW), owned by `expected_owner` (root in
// production), and not writable by group or others; else PolicyError(Kind::Insecure):
//   "FILE: owned by uid N, not uid 0: refused (a user-writable policy is a privilege escalation path)"
//   "FILE: writable by group or others (mode 0664): refused (...)"
void check_policy_file_security(const std::string& path);
void check_policy_file_security(const std::string& path, uid_t expected_owner);

// What the plugin calls: the security check and the read on the same descriptor (no check-then-open race),
// then parse.
PolicyFile load_policy_secure(const std::string& path, uid_t expected_owner = 0);

// ---------------------------------------------------------------------------------------------------------------
// Applying

// [defaults] refined by [partition.NAME] (an unknown partition, or "", gets [defaults] alone). Precedence:
// scalar keys and limits: the partition's value replaces the default's, key by key; env.force / env.default:
// merged by variable, the partition winning (a name the partition forces leaves the default map and vice versa);
// env.forbid: union (a partition cannot lift a default's forbid; a partition's forbid drops the name from
// the merged force/default maps); env.allow_override: the partition's list replaces the default's.
EffectivePolicy resolve(const PolicyFile& file, const std::string& partition);

// Which mode a job gets. `option_given`: the job has --paratune; `user_mode`: its mode= key, if any.
struct ModeRequest {
  bool option_given = false;
  std::optional<Mode> user_mode;
  int gpus_per_node = 0;
  Mode plugin_default_mode = Mode::Apply;  // plugstack default_mode=
  bool plugin_on_by_default = false;       // plugstack on_by_default=
};
struct ModeDecision {
  Mode mode = Mode::Off;
  bool env_rules_apply = false;  // apply plan_env(p, {}) (forced/default/forbidden) even when mode is Off
  std::string why;               // one line for the job log
  std::vector<PolicyChange> changes;  // where the policy overrode what the user asked
};
ModeDecision decide_mode(const EffectivePolicy& p, const ModeRequest& r);

// The advisor's search limits the policy imposes (top_n, all_frameworks: SearchLimits' defaults).
advisor::SearchLimits search_limits(const EffectivePolicy& p);

// The frameworks the limits allow: limits.frameworks, else all of them.
const std::vector<advisor::Framework>& allowed_frameworks(const EffectivePolicy& p);
// The allowed frameworks whose every layout the limits exclude: none of their ZeRO
// stages or none of their recompute modes is among limits.zero_stages / limits.recompute (framework_traits.h). A job
// of such a framework gets "nothing fits"; when it is every allowed one, every job of the partition does.
std::vector<advisor::Framework> unplannable_frameworks(const EffectivePolicy& p);

// Fixed facts replace the probe's values in scenario.cluster (facts.kernels: the settings a stack without
// Transformer Engine or FlashAttention-3 runs are set, and the user's settings that need a missing kernel or break
// limits.max_ep / limits.dispatchers are removed); user constraints in scenario.parallel (from
// --paratune keys or a scenario file) that break a limit are removed (the search then picks within the limits;
// a dp fixed alongside a removed tp/pp/cp is removed too); a framework that is not allowed is replaced by the
// first allowed one (in the policy's order), and a framework_version the user gave for the replaced framework is
// dropped. The policy's framework_version defaults become scenario.training.site_versions (a version the user
// names wins over them). Each change is returned. Never throws for a valid policy.
std::vector<PolicyChange> apply_to_scenario(const EffectivePolicy& p, advisor::Scenario& s);

// What to do with the job environment. `wanted`: the variables paratune wants (the plan's NCCL_*/CUDA_*, and
// the PARATUNE_* contract if the caller passes it; PARATUNE_* are never affected by env rules).
struct EnvPlan {
  std::vector<advisor::EnvSetting> set_if_unset;  // a value the user already has is kept
  std::vector<advisor::EnvSetting> set_always;    // replaces a user's value (log it when it does)
  std::vector<std::string> unset;                 // remove from the job env (log it when present)
  std::vector<PolicyChange> changes;
};
EnvPlan plan_env(const EffectivePolicy& p, const std::vector<advisor::EnvSetting>& wanted);

// A one-paragraph human summary of an effective policy (for `paratune policy check` and the job log).
std::string summary(const EffectivePolicy& p);

}  // namespace paratune::policies
