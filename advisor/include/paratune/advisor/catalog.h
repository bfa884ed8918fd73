// GPU catalog: peak rates, memory and links of the accelerators the advisor knows (vendor data sheets, cited in
// catalog.cpp). Pure values; lookups throw std::invalid_argument listing the valid keys.
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

enum class GpuArch { Pascal, Volta, Turing, Ampere, Ada, Hopper, Blackwell, Cdna2, Cdna3 };
const char* to_string(GpuArch a);
// Whether FlashAttention kernels exist for the architecture (FlashAttention-2: Ampere, Ada, Hopper; FA3/cuDNN on
// Hopper and Blackwell; ROCm's port on CDNA2/3). Volta, Turing and Pascal run unfused attention.
bool has_flash_attention(GpuArch a);

struct GpuSpec {
  std::string key;            // catalog key ("h100-sxm5-80gb")
  std::string name;           // marketing name
  GpuArch arch = GpuArch::Ampere;
  double bf16_tflops = 0;     // dense BF16 tensor peak (FP16 where the GPU has no BF16; see fp16_tflops)
  double fp16_tflops = 0;     // dense FP16 tensor peak
  double fp8_tflops = 0;      // dense FP8 tensor peak; 0 = no FP8 tensor cores
  double memory_gib = 0;      // device memory visible to CUDA/ROCm
  double hbm_tbps = 0;        // memory bandwidth, TB/s
  double nvlink_gbps = 0;     // NVLink / Infinity Fabric bandwidth per GPU, GB/s per direction; 0 = PCIe only
  double pcie_gbps = 0;       // host link GB/s per direction
  bool nvswitch = false;      // all-to-all NVSwitch fabric inside the node (vs mesh / bridge)
  bool nvls = false;          // NVLink SHARP capable (NVSwitch gen3+)
  bool bf16 = true;           // BF16 tensor cores present
  int sm_count = 0;           // streaming multiprocessors / compute units (for CUDA_DEVICE_MAX_CONNECTIONS notes)
  bool fast_softmax = false;  // Blackwell Ultra (B300/GB300): twice the SFU exponent rate ("2x attention-layer
                              // acceleration", NVIDIA Blackwell Ultra data sheet): fused attention runs faster
  const char* source = "";    // data sheet
};

// Catalog lookup; accepts the probe's keys and a few aliases ("h100" is not one: keys are explicit).
const GpuSpec& gpu_spec(const std::string& key);
bool is_gpu_key(const std::string& key);
// A catalog GPU of the Hopper or Blackwell generation (an unknown key is not: its generation is not known).
bool hopper_or_blackwell(const std::string& key);
// The cluster's GPU can be priced: a catalog key, or [cluster.gpu_spec] giving at least its peak and its memory.
bool gpu_described(const ClusterSpec& c);
std::vector<std::string> gpu_keys();

// The catalog entry with ClusterSpec overrides applied (peak_tflops, memory_gib, hbm_tbps, nvlink_gbps).
GpuSpec effective_gpu(const ClusterSpec& c);

}  // namespace paratune::advisor
