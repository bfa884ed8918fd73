// The collective bus-bandwidth section of docs/accuracy.md (nccl_busbw.csv rows and the efficiencies read off them).
#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "accuracy_sections.h"
#include "accuracy_stats.h"

namespace paratune::accuracy {

namespace {

struct BusRow {
  const char* id;
  const char* klass;
  double busbw, line;
  const char* what;
};

std::string f2(double v) { return formatted(v, "%.2f"); }

}  // namespace

void write_busbw(std::ostream& md) {
    static const BusRow bus[] = {
        {"NB1", "nvlink-ring", 370, 450, "H100 8-GPU ring (maintainer: ~370 GB/s Ring)"},
        {"NB1", "nvls", 480, 450, "H100 8-GPU all-reduce with NVLS"},
        {"NB2", "nvls", 476, 450, "H100 node all-reduce (measured)"},
        {"NB3", "nvls", 475, 450, "H200 node all-reduce"},
        {"NB9", "nvlink-ring", 200, 300, "A100 SXM 8-GPU, 1 GB max"},
        {"NB7", "nvlink-ring", 232.5, 300, "A100 SXM 8-GPU, 8 GB"},
        {"NB14", "nvlink-ring", 124, 150, "V100 SXM2 4-GPU (Jean Zay)"},
        {"NB4", "infiniband", 192, 200, "DGX A100, 8x HDR (Ring)"},
        {"NB2", "infiniband", 47, 50, "NDR 400 per NIC (Ring, 2 nodes)"},
        {"NB5", "infiniband", 24, 25, "HDR 200 per NIC with GPUDirect RDMA"},
        {"NB6", "infiniband", 12.2, 12.5, "EDR 100, 1 NIC"},
        {"NB6", "infiniband", 48, 50, "DGX-1, 4x EDR"},
        {"NB8", "infiniband", 91, 100, "2x HGX A100, 4x 200G"},
        {"NB15", "omnipath", 10.6, 50, "V100, 4 nodes, OPA 400 Gb/s per node"},
        {"NB16", "omnipath", 6.9, 50, "V100, 16 nodes, OPA"},
        {"NB17", "omnipath", 5.1, 50, "A100, 4 nodes, 4x OPA (pessimistic)"},
    };
    md << "## Collective bus-bandwidth efficiency (from `nccl_busbw.csv`)\n\n"
       << "| row | class | busbw GB/s | line rate GB/s | efficiency | what |\n|---|---|---|---|---|---|\n";
    std::map<std::string, std::vector<double>> cls;
    for (const auto& b : bus) {
      md << "| " << b.id << " | " << b.klass << " | " << b.busbw << " | " << b.line << " | " << f2(b.busbw / b.line)
         << " | " << b.what << " |\n";
      cls[b.klass].push_back(b.busbw / b.line);
    }
    md << "\nMedian per class (the model's `nvlink_eff`, `nvls_gain` = nvls/ring, `fabric_eff`):\n\n";
    for (auto& [k, v] : cls) {
      std::sort(v.begin(), v.end());
      md << "- " << k << ": " << f2(v[v.size() / 2]) << " (" << v.size() << " points)\n";
    }
    md << "\nRoCE, EFA, Slingshot and TCP have no point in the file: their efficiencies (0.88, 0.80, 0.80, 0.40) "
          "are priors, not fits. NB13 (a misconfigured system) and NB10/NB11/NB12 (PCIe bridges, NV12 pairs, H800) "
          "are not used.\n\n";
}

}  // namespace paratune::accuracy
