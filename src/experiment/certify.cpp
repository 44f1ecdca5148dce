// run --certify's digests and comparison (certify.h).
#include "src/experiment/certify.h"

#include <cmath>
#include <cstring>

#include "common/float_formats.h"
#include "src/runtime/numerics_plan.h"

namespace ds {

uint64_t logits_digest(std::span<const double> row) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits, over the values' bytes in order
  for (double v : row) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 8; ++i) {
      h ^= (bits >> (8 * i)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

int64_t logits_ulps(std::span<const double> a, std::span<const double> b, bool fp64) {
  int64_t worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return -1;
      continue;
    }
    const int64_t d = fp64 ? ordinal(b[i]) - ordinal(a[i])
                           : int64_t{ordinal(static_cast<float>(b[i]), Storage::native)} -
                                 int64_t{ordinal(static_cast<float>(a[i]), Storage::native)};
    worst = std::max(worst, d < 0 ? -d : d);
  }
  return worst;
}

PassLogits& DigestingRuntime::forward(std::span<const BatchRow> rows) {
  PassLogits& out = inner_.forward(rows);
  for (size_t r = 0; r < rows.size(); ++r) {
    const int slot = rows[r].slot, pos = rows[r].pos;
    if (slot < 0 || static_cast<size_t>(slot) >= slot_seq_.size()) continue;
    const int seq = slot_seq_[static_cast<size_t>(slot)];
    if (digests_.size() <= static_cast<size_t>(seq)) {
      digests_.resize(static_cast<size_t>(seq) + 1);
      tokens_.resize(static_cast<size_t>(seq) + 1);
    }
    auto& d = digests_[static_cast<size_t>(seq)];
    if (d.size() <= static_cast<size_t>(pos)) {
      d.resize(static_cast<size_t>(pos) + 1, 0);
      tokens_[static_cast<size_t>(seq)].resize(static_cast<size_t>(pos) + 1, -1);
    }
    const std::span<const double> row = out.row(static_cast<int>(r));
    d[static_cast<size_t>(pos)] = logits_digest(row);
    const std::pair<int, int> at{seq, pos};
    if (capture_at_ == at) kept_.assign(row.begin(), row.end());
    if (reference_ == nullptr || (first_ && *first_ < at)) continue;
    const auto& ref = reference_->digests_;
    const bool known = static_cast<size_t>(seq) < ref.size() &&
                       static_cast<size_t>(pos) < ref[static_cast<size_t>(seq)].size();
    if (known &&
        ref[static_cast<size_t>(seq)][static_cast<size_t>(pos)] == d[static_cast<size_t>(pos)]) {
      continue;
    }
    first_ = at;
    kept_.assign(row.begin(), row.end());
  }
  return out;
}

void DigestingRuntime::set_plan(NumericsPlan plan) {
  inner_.set_plan(std::move(plan));
}

void DigestingRuntime::bind_slot(int slot, int seq) {
  if (slot_seq_.size() <= static_cast<size_t>(slot))
    slot_seq_.resize(static_cast<size_t>(slot) + 1, -1);
  slot_seq_[static_cast<size_t>(slot)] = seq;
}

void DigestingRuntime::chose(int seq, int row, int32_t token) {
  if (seq < 0 || row < 0 || static_cast<size_t>(seq) >= tokens_.size()) return;
  auto& t = tokens_[static_cast<size_t>(seq)];
  if (static_cast<size_t>(row) < t.size()) t[static_cast<size_t>(row)] = token;
}

trace::Certificate make_certificate(const DigestingRuntime& untapped,
                                    const DigestingRuntime& tapped,
                                    const std::vector<int>& prompt_lens, int64_t ulps) {
  trace::Certificate c;
  const auto& dt = tapped.digests();
  const auto& du = untapped.digests();
  for (size_t q = 0; q < dt.size(); ++q) {
    for (size_t r = 0; r < dt[q].size(); ++r) {
      trace::CertifyRow row;
      row.seq = static_cast<int32_t>(q);
      row.row = static_cast<int32_t>(r);
      row.tapped = dt[q][r];
      row.token_tapped = tapped.tokens()[q][r];
      const bool known = q < du.size() && r < du[q].size();
      row.untapped = known ? du[q][r] : 0;
      row.token_untapped = known ? untapped.tokens()[q][r] : -1;
      ++c.rows;
      const bool same =
          known && row.tapped == row.untapped && row.token_tapped == row.token_untapped;
      if (!same && c.identical) {
        c.identical = false;
        c.seq = row.seq;
        c.position = row.row;
        const int first_choice = q < prompt_lens.size() ? std::max(0, prompt_lens[q] - 1) : 0;
        c.step = std::max(0, row.row - first_choice);
        c.token_differs = row.token_tapped != row.token_untapped;
        c.ulps = ulps;
      }
      c.digests.push_back(row);
    }
  }
  return c;
}

}  // namespace ds
