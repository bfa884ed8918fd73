// paratune_gen_log: write a generated site tuning log (site_log.h) for benchmarks and experiments.
//   paratune_gen_log --lines 1000000 --out /tmp/site.jsonl [--seed N] [--index-last N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "site_log.h"

int main(int argc, char** argv) {
  paratune::bench::SiteLogOptions o;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--lines")) o.lines = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--out")) out = argv[i + 1];
    else if (!std::strcmp(argv[i], "--seed")) o.seed = unsigned(std::strtoul(argv[i + 1], nullptr, 10));
    else if (!std::strcmp(argv[i], "--index-last")) o.index_last = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: %s --lines N --out FILE [--seed N] [--index-last N]\n", argv[0]);
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "usage: %s --lines N --out FILE [--seed N] [--index-last N]\n", argv[0]);
    return 2;
  }
  try {
    const auto f = paratune::bench::write_site_log(out, o);
    std::printf("%s: %zu lines, %zu jobs, %zu bytes, %zu configurations; jobs %s..%s\n", out.c_str(), f.lines, f.jobs,
                f.bytes, f.configurations, f.first_job.c_str(), f.last_job.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paratune_gen_log: %s\n", e.what());
    return 1;
  }
  return 0;
}
