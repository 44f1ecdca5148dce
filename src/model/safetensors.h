// safetensors files: a memory-mapped reader (single file or sharded index) and a small writer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/number_format.h"
#include "src/model/mapped_file.h"

namespace ds {

// The formats a safetensors tensor may hold (its header's dtype is the format's safetensors
// name, common/number_format.h): f32, bf16, f16 and f64.
bool is_tensor_format(NumberFormat f);

struct TensorInfo {
  std::string name;
  NumberFormat dtype = NumberFormat::f32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;  // inside the mapped file
  std::string file;                 // which file holds it (for messages)

  int64_t numel() const;
};

// All tensors of a checkpoint: one model.safetensors, or the shards named by
// model.safetensors.index.json. Files stay mapped for the lifetime of this object.
class SafetensorsCheckpoint {
 public:
  // `path` is a .safetensors file, an index .json, or a directory holding one of them.
  // Throws ds::Error for a missing file, a truncated or corrupt header, out-of-range offsets.
  static SafetensorsCheckpoint open(const std::filesystem::path& path);

  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // Throws ds::Error naming the tensor when absent.
  const TensorInfo& get(const std::string& name) const;
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::vector<std::filesystem::path>& files() const { return files_; }

  // Converts a tensor to float32 (exact for F32/BF16/F16; F64 is rounded to nearest).
  static std::vector<float> to_f32(const TensorInfo& t);
  // The mapping that holds a tensor of this checkpoint (sharing it keeps the bytes valid after
  // this object is gone).
  std::shared_ptr<const MappedFile> mapping_of(const TensorInfo& t) const;

 private:
  void add_file(const std::filesystem::path& file);
  std::vector<std::shared_ptr<const MappedFile>> maps_;
  std::vector<std::filesystem::path> files_;
  std::map<std::string, TensorInfo> tensors_;
};

// A tensor to write: float values stored in `dtype` (BF16/F16 round to nearest even).
struct TensorToWrite {
  std::string name;
  NumberFormat dtype = NumberFormat::f32;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Writes one .safetensors file (header sorted by name, data 8-byte aligned after the header).
void write_safetensors(const std::filesystem::path& path,
                       const std::vector<TensorToWrite>& tensors);

}  // namespace ds
