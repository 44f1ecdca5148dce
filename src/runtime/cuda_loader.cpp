// Loading the CUDA module (cuda_loader.h) with dlopen, and what the executable asks of it.
#include "src/runtime/cuda_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <vector>

#include "common/error.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  if (const char* env = std::getenv("DRIFTSCOPE_CUDA_MODULE"); env != nullptr && *env != 0) {
    out.emplace_back(env);
    return out;  // an explicit choice is the only one
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back(exe.parent_path() / kCudaModuleFile);
    out.push_back(exe.parent_path().parent_path() / "lib" / "driftscope" / kCudaModuleFile);
  }
#ifdef DRIFTSCOPE_CUDA_MODULE_BUILD_PATH
  out.emplace_back(DRIFTSCOPE_CUDA_MODULE_BUILD_PATH);
#endif
  return out;
}

struct Loaded {
  const CudaModuleApi* api = nullptr;
  std::string error, hint;
};

Loaded load() {
  Loaded l;
  std::string looked;
  for (const fs::path& p : candidates()) {
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      looked += (looked.empty() ? "" : ", ") + p.string();
      continue;
    }
    void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = dlerror();
      l.error = fmt::format("the CUDA module {} could not be loaded: {}", p.string(),
                            why != nullptr ? why : "unknown dlopen error");
      l.hint =
          "install the CUDA 13 runtime libraries it names (libcudart, libcublasLt, libcupti) "
          "or put them on LD_LIBRARY_PATH; or use --device cpu";
      return l;
    }
    using Entry = const CudaModuleApi* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(h, kCudaModuleEntry));
    const CudaModuleApi* api = entry != nullptr ? entry() : nullptr;
    if (api == nullptr || api->abi != kCudaModuleAbi) {
      l.error = fmt::format("{} is not a CUDA module of this driftscope (abi {}, need {})",
                            p.string(), api != nullptr ? api->abi : -1, kCudaModuleAbi);
      l.hint = "rebuild driftscope and its CUDA module together";
      return l;
    }
    l.api = api;
    return l;
  }
  l.error = fmt::format("the CUDA module {} was not found (looked in: {})", kCudaModuleFile,
                        looked.empty() ? "nowhere" : looked);
  l.hint =
      "this build has no CUDA backend (nvcc was not found when it was built) or the module "
      "was not installed beside the executable; set DRIFTSCOPE_CUDA_MODULE to its path, or "
      "use --device cpu (the reference backend, which emulates GPU numerics)";
  return l;
}

const Loaded& loaded() {
  static std::once_flag once;
  static Loaded l;
  std::call_once(once, [] { l = load(); });
  return l;
}

}  // namespace

const CudaModuleApi& cuda_module() {
  const Loaded& l = loaded();
  if (l.api == nullptr) throw Error(l.error, l.hint);
  return *l.api;
}

int cuda_device_count() {
  const Loaded& l = loaded();
  return l.api != nullptr ? l.api->device_count() : 0;
}

std::string cuda_device_summary() {
  const Loaded& l = loaded();
  return l.api != nullptr ? l.api->device_summary() : l.error;
}

void check_cuda_support(const Numerics& nx) {
  const Loaded& l = loaded();
  if (l.api == nullptr) throw Error("device 'cuda': " + l.error, l.hint);
  if (l.api->device_count() == 0) {
    throw Error("device 'cuda': " + l.api->device_summary(),
                "use --device cpu (the reference backend, which emulates GPU numerics)");
  }
  if (nx.dtype == DType::fp64) {
    throw Error("dtype fp64 is the CPU oracle; the CUDA backend runs fp32, fp16, bf16, layercast",
                "use --device cpu for fp64");
  }
  if (nx.attn_kernel == AttnKernel::tiled && nx.dtype != DType::bf16 && nx.dtype != DType::fp16) {
    throw Error(fmt::format("attention=tiled runs on tensor cores in fp16 or bf16, not {}",
                            dtype_name(nx.dtype)),
                "use --kernel attention=rowwise, or --dtype bf16 / fp16");
  }
  if (nx.accum_f16 && nx.dtype == DType::bf16 && nx.gemm_kernel == GemmKernel::cublas) {
    throw Error("cuBLAS has no fp16 accumulation for bf16 GEMMs",
                "use --kernel gemm=tiled, whose fp16 accumulation works with every dtype");
  }
}

std::unique_ptr<Runtime> make_cuda_runtime(const Model& model, const Numerics& numerics,
                                           int capacity, int slots) {
  check_cuda_support(numerics);
  return cuda_module().make_runtime(model, numerics, capacity, slots);
}

}  // namespace ds
