// Validation and JSON form of the run configuration.
#include "src/run_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "kernels/device.h"

namespace ds {

void validate(const RunConfig& c) {
  if (c.device == "cuda") {
    throw Error(cuda_device_count() == 0
                    ? "device 'cuda': " + cuda_device_summary()
                    : std::string("device 'cuda': the CUDA backend is not part of this build yet"),
                "use --device cpu (the reference backend)");
  }
  if (c.device != "cpu") throw Error(fmt::format("unknown device '{}'", c.device), "--device takes cpu or cuda");
  parse_dtype(c.dtype);
  if (c.max_new < 0) throw Error(fmt::format("max_new {} is negative", c.max_new), "--max-new takes N >= 0");
  validate(c.sampling());
}

DType compute_dtype(const RunConfig& c) { return parse_dtype(c.dtype); }

std::string to_json(const RunConfig& c) {
  nlohmann::ordered_json j;
  j["device"] = c.device;
  j["dtype"] = c.dtype;
  j["max_new"] = c.max_new;
  j["temperature"] = c.temperature;
  j["top_p"] = c.top_p;
  j["top_k"] = c.top_k;
  j["seed"] = c.seed;
  return j.dump();
}

}  // namespace ds
