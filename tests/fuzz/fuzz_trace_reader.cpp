// Fuzz target: an HDF5 file image opened as a trace (TraceReader::open_image, the core driver:
// no file), then read as `driftscope show` and `diff` read it: every sequence's info, the first
// rows of each hidden site, top-k, lse, full logits and the /kernels table.
#include <algorithm>
#include <cstddef>

#include "tests/fuzz/fuzz_target.h"
#include "trace/reader.h"

namespace {

// Reads of more elements than this are skipped: a 40 kB image may declare a dataset of 2^60
// values (legal HDF5, all fill value), and what is being tested is the parsing, not malloc.
constexpr int64_t kMaxElements = 1 << 20;

int64_t rows_to_read(int64_t rows, int64_t width) {
  const int64_t n = std::min<int64_t>(rows, 4);
  return width > 0 && n * width > kMaxElements ? 0 : n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ds::fuzz::guarded([&] {
    const auto r = ds::trace::TraceReader::open_image(
        {reinterpret_cast<const std::byte*>(data), size}, "fuzz.h5");
    const auto seqs = r.sequence_indices();
    for (size_t i = 0; i < seqs.size() && i < 4; ++i) {
      const auto s = r.sequence(seqs[i]);
      for (const auto& site : s.sites) {
        const int64_t width = site.shape.size() == 2 ? site.shape[1] : 0;
        const int64_t n = rows_to_read(s.rows, width);
        if (n > 0) (void)r.hidden(s.index, site.name, 0, n);
      }
      if (s.topk > 0) {
        const int64_t n = rows_to_read(s.rows, s.topk);
        if (n > 0) {
          (void)r.topk(s.index, 0, n);
          (void)r.lse(s.index, 0, n);
        }
      }
      if (s.has_full_logits) {
        // the width of logits/full is only known from the model; read one row at most
        (void)r.full_logits(s.index, 0, std::min<int64_t>(s.rows, 1));
      }
    }
    if (r.has_kernels()) (void)r.kernels();
  });
}
