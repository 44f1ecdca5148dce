// safetensors reader (memory-mapped, single or sharded) and writer.
// Format: u64 little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}},
// then the data; offsets are relative to the end of the header.
#include "src/model/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/float_formats.h"
#include "common/json_error.h"
#include "src/model/text_file.h"

namespace fs = std::filesystem;

namespace ds {

bool is_tensor_format(NumberFormat f) {
  return is_float(f);
}

int64_t TensorInfo::numel() const {
  // A 0 anywhere makes the count 0 whatever the other dimensions: [2^62, 4, 0] is a valid empty
  // tensor, and multiplying its leading dimensions first would overflow int64.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

constexpr uint64_t kMaxHeader = 100ull << 20;  // the reference implementation's limit

NumberFormat parse_dtype(const std::string& s, const std::string& where) {
  const auto f = find_number_format(s, &NumberFormatTraits::safetensors);
  if (f && is_tensor_format(*f)) return *f;
  throw Error(fmt::format("{}: unsupported tensor dtype '{}'", where, s),
              "supported dtypes: F32, BF16, F16 (and F64)");
}

[[noreturn]] void corrupt(const fs::path& file, const std::string& what) {
  throw Error(fmt::format("{}: corrupt safetensors file: {}", file.string(), what),
              "the file may be truncated (an interrupted download?); fetch it again");
}

// The JSON header of a safetensors file's bytes, which must be an object; `length` is set to its
// length in bytes (the data section follows it).
nlohmann::json read_header(const fs::path& file, std::span<const std::byte> bytes,
                           uint64_t& length) {
  if (bytes.size() < 8)
    corrupt(file, fmt::format("{} bytes, too short for a header", bytes.size()));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  if (n > kMaxHeader || n > bytes.size() - 8) {
    corrupt(file, fmt::format("header length {} exceeds the file size {}", n, bytes.size()));
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data() + 8),
                                   reinterpret_cast<const char*>(bytes.data() + 8 + n));
  } catch (const nlohmann::json::exception& e) {
    const JsonFailure f =
        json_failure(std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), n), e);
    corrupt(file, f.line == 0
                      ? fmt::format("header: {}", f.cause)
                      : fmt::format("header is not valid JSON at byte {}: {}", f.column, f.cause));
  }
  if (!header.is_object()) corrupt(file, "header is not a JSON object");
  length = n;
  return header;
}

// The element count of a tensor's dimensions, refused once it would pass the data section's size
// (so the product cannot overflow); `shape` is the header's list, for the message.
uint64_t checked_numel(const fs::path& file, const std::string& name,
                       const std::vector<int64_t>& dims, const nlohmann::json& shape,
                       uint64_t data_size) {
  uint64_t numel = std::find(dims.begin(), dims.end(), 0) == dims.end() ? 1 : 0;
  for (int64_t d : dims) {
    if (numel == 0) break;
    if (numel > data_size / static_cast<uint64_t>(d)) {  // numel stays <= the data size
      corrupt(file, fmt::format("tensor '{}' of shape {} has more elements than the file's "
                                "{} data bytes",
                                name, shape.dump(), data_size));
    }
    numel *= static_cast<uint64_t>(d);
  }
  return numel;
}

// One tensor of the header, its dtype, shape and data offsets checked against the data section.
// Throws nlohmann::json::exception for an entry missing a field.
TensorInfo tensor_entry(const fs::path& file, const std::string& name, const nlohmann::json& v,
                        std::span<const std::byte> data) {
  std::string where = fmt::format("{}: tensor '{}'", file.string(), name);
  TensorInfo t;
  t.name = name;
  t.file = file.string();
  t.dtype = parse_dtype(v.at("dtype").get<std::string>(), where);
  // Every number is checked in 64-bit arithmetic before it sizes anything: a shape whose
  // element count passes the data section is refused before the product can overflow.
  const auto& shape = v.at("shape");
  const auto& off = v.at("data_offsets");
  if (!shape.is_array() || !off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned()) {
    corrupt(file, fmt::format("tensor '{}' needs a shape list and two data offsets", name));
  }
  for (const auto& d : shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      corrupt(file, fmt::format("tensor '{}' has the dimension {}", name, d.dump()));
    }
    t.shape.push_back(d.get<int64_t>());
  }
  const uint64_t numel = checked_numel(file, name, t.shape, shape, data.size());
  const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end || end > data.size()) {
    corrupt(file, fmt::format("tensor '{}' has data offsets [{}, {}] outside the file (its "
                              "data section holds {} bytes)",
                              name, begin, end, data.size()));
  }
  const uint64_t expected = numel * traits(t.dtype).bytes;
  if (end - begin != expected) {
    corrupt(file, fmt::format("tensor '{}' holds {} bytes, its shape needs {}", name, end - begin,
                              expected));
  }
  t.data = data.subspan(begin, end - begin);
  return t;
}

// Refuses two tensors of one file sharing bytes: one of them would read the other's weights.
void check_no_overlap(const fs::path& file, std::vector<const TensorInfo*> added,
                      std::span<const std::byte> data) {
  std::sort(added.begin(), added.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->data.data() < b->data.data();
  });
  const TensorInfo* last = nullptr;  // the non-empty tensor reaching furthest so far
  for (const TensorInfo* t : added) {
    if (t->data.empty()) continue;
    if (last != nullptr && t->data.data() < last->data.data() + last->data.size()) {
      corrupt(file, fmt::format("tensors '{}' and '{}' overlap (bytes [{}, {}) and [{}, {}) of "
                                "the data section)",
                                last->name, t->name, last->data.data() - data.data(),
                                last->data.data() - data.data() + last->data.size(),
                                t->data.data() - data.data(),
                                t->data.data() - data.data() + t->data.size()));
    }
    const auto end_of = [](const TensorInfo* x) { return x->data.data() + x->data.size(); };
    if (last == nullptr || end_of(t) > end_of(last)) last = t;
  }
}

}  // namespace

void SafetensorsCheckpoint::add_file(const fs::path& file) {
  auto map = std::make_shared<const MappedFile>(file);
  const auto bytes = map->bytes();
  uint64_t header_bytes = 0;
  const nlohmann::json header = read_header(file, bytes, header_bytes);
  const auto data = bytes.subspan(8 + header_bytes);
  std::vector<const TensorInfo*> added;  // this file's tensors, for the overlap check
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    try {
      auto [it, fresh] = tensors_.emplace(name, tensor_entry(file, name, v, data));
      if (!fresh) corrupt(file, fmt::format("tensor '{}' appears twice", name));
      added.push_back(&it->second);
    } catch (const nlohmann::json::exception& e) {
      corrupt(file,
              fmt::format("tensor '{}' has a malformed entry ({})", name, json_error_cause(e)));
    }
  }
  check_no_overlap(file, added, data);
  files_.push_back(file);
  maps_.push_back(std::move(map));
}

SafetensorsCheckpoint SafetensorsCheckpoint::open(const fs::path& path) {
  fs::path p = path;
  if (fs::is_directory(p)) {
    if (fs::exists(p / "model.safetensors")) {
      p = p / "model.safetensors";
    } else if (fs::exists(p / "model.safetensors.index.json")) {
      p = p / "model.safetensors.index.json";
    } else {
      throw Error(fmt::format("'{}' holds no model.safetensors or model.safetensors.index.json",
                              path.string()),
                  "point --model at a Hugging Face model directory or a llama2.c .bin file");
    }
  }
  SafetensorsCheckpoint ck;
  if (p.extension() == ".json") {
    const char* hint = "a sharded checkpoint index maps each tensor name to its shard file";
    nlohmann::json index;
    const std::string text =
        read_regular_text_file(p, kMaxShardIndexBytes, "checkpoint index", hint);
    try {
      index = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(json_parse_failure(p.string(), text, e), hint);
    }
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      throw Error(fmt::format("{}: no 'weight_map' object", p.string()), hint);
    }
    std::set<std::string> shards;
    for (const auto& [name, file] : index["weight_map"].items()) {
      if (!file.is_string()) {
        throw Error(fmt::format("{}: tensor '{}' maps to {}, not a file name", p.string(), name,
                                file.dump()),
                    hint);
      }
      shards.insert(file.get<std::string>());
    }
    for (const auto& shard : shards) ck.add_file(p.parent_path() / shard);
    for (const auto& [name, file] : index["weight_map"].items()) {
      auto it = ck.tensors_.find(name);
      if (it == ck.tensors_.end() ||
          fs::path(it->second.file).filename() != file.get<std::string>()) {
        throw Error(fmt::format("{}: tensor '{}' is not in its shard '{}'", p.string(), name,
                                file.get<std::string>()),
                    "the index and the shard files do not belong together");
      }
    }
  } else {
    ck.add_file(p);
  }
  return ck;
}

const TensorInfo& SafetensorsCheckpoint::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    throw Error(fmt::format("tensor '{}' is missing from the checkpoint", name),
                "the config.json and the weights do not match, or the file is incomplete");
  }
  return it->second;
}

std::shared_ptr<const MappedFile> SafetensorsCheckpoint::mapping_of(const TensorInfo& t) const {
  for (const auto& m : maps_) {
    const auto b = m->bytes();
    if (t.data.data() >= b.data() && t.data.data() + t.data.size() <= b.data() + b.size()) return m;
  }
  return nullptr;
}

std::vector<float> SafetensorsCheckpoint::to_f32(const TensorInfo& t) {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<float> out(n);
  if (n == 0) return out;  // a tensor with a 0 dimension: no data, and memcpy must not see null
  const std::byte* p = t.data.data();
  switch (t.dtype) {
    case NumberFormat::f32:
      std::memcpy(out.data(), p, n * 4);
      break;
    case NumberFormat::f64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        out[i] = static_cast<float>(d);
      }
      break;
    case NumberFormat::bf16:
    case NumberFormat::f16: {
      std::vector<uint16_t> bits(n);
      std::memcpy(bits.data(), p, 2 * n);
      widen(bits.data(), out.data(), n, *storage_of(t.dtype));
    } break;
    default:  // parse_dtype admits no other format (is_tensor_format)
      break;
  }
  return out;
}

void write_safetensors(const fs::path& path, const std::vector<TensorToWrite>& tensors) {
  std::vector<const TensorToWrite*> sorted;
  for (const auto& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->name < b->name; });
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto* t : sorted) {
    int64_t numel = 1;
    for (int64_t d : t->shape) numel *= d;
    if (numel != static_cast<int64_t>(t->values.size())) {
      throw Error(fmt::format("write_safetensors: tensor '{}' has {} values for its shape's {}",
                              t->name, t->values.size(), numel));
    }
    size_t begin = data.size();
    for (float v : t->values) {
      switch (t->dtype) {
        case NumberFormat::f32:
          data.append(reinterpret_cast<const char*>(&v), 4);
          break;
        case NumberFormat::f64: {
          double d = v;
          data.append(reinterpret_cast<const char*>(&d), 8);
          break;
        }
        case NumberFormat::bf16:
        case NumberFormat::f16: {
          uint16_t b = 0;
          narrow(&v, &b, 1, *storage_of(t->dtype));
          data.append(reinterpret_cast<const char*>(&b), 2);
          break;
        }
        default:
          throw Error(fmt::format("write_safetensors: tensor '{}' of {} values", t->name,
                                  traits(t->dtype).name));
      }
    }
    header[t->name] = {{"dtype", traits(t->dtype).safetensors},
                       {"shape", t->shape},
                       {"data_offsets", {begin, data.size()}}};
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');  // align the data section
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(fmt::format("cannot write '{}'", path.string()));
  uint64_t n = h.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.write(len, 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw Error(fmt::format("error writing '{}'", path.string()));
}

}  // namespace ds
