// Tap hook: the runtime's two-phase callback at every layer boundary (docs/trace-format.md, site
// names). Before a forward pass the runtime asks once per site whether it is wanted; during the
// pass it hands over each wanted tensor exactly as the next operation consumes it. With no hook, or
// no wanted site, nothing is copied.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/float_formats.h"
#include "trace/schema.h"

namespace ds {

// The site kinds, their names and the per-layer kinds are the trace format's (trace/schema.h).
using trace::kLayerSiteCount;
using trace::layer_site_index;
using trace::layer_site_kind;
using trace::Site;
using trace::site_name;
using trace::SiteKind;

// A tapped tensor: `rows` rows of `width` values (float or double, as the runtime computes),
// row r belonging to the sequence in KV-cache slot slot[r], at input position pos[r].
struct TapTensor {
  const float* f32 = nullptr;  // exactly one of f32 / f64 is set
  const double* f64 = nullptr;
  int rows = 0;
  int width = 0;
  const int* slot = nullptr;
  const int* pos = nullptr;
};

// The tapped tensor of `rows` rows of `width` values at data, the rows' slots and positions.
inline TapTensor tap_tensor(const float* data, int rows, int width, const int* slot,
                            const int* pos) {
  TapTensor t;
  t.f32 = data;
  t.rows = rows;
  t.width = width;
  t.slot = slot;
  t.pos = pos;
  return t;
}
inline TapTensor tap_tensor(const double* data, int rows, int width, const int* slot,
                            const int* pos) {
  TapTensor t = tap_tensor(static_cast<const float*>(nullptr), rows, width, slot, pos);
  t.f64 = data;
  return t;
}

// The logits rows of a pass summarised as a trace stores them (docs/trace-format.md): per row the
// k largest logits with their ids (by logit descending, ties by lower id; trace/topk.h top_k) and
// the log-sum-exp of the whole row (trace/topk.h log_sum_exp, rounded to float).
struct LogitsSummary {
  int rows = 0, k = 0, vocab = 0;
  const int32_t* ids = nullptr;   // (rows, k)
  const float* logits = nullptr;  // (rows, k)
  const float* lse = nullptr;     // (rows)
  const int* slot = nullptr;      // (rows) as in TapTensor
  const int* pos = nullptr;
};

class TapHook {
 public:
  virtual ~TapHook() = default;
  // Asked once per site before the runtime starts; false means the site is never handed over.
  virtual bool wants(const Site& site) = 0;
  // Called with each wanted tensor; the data is only valid during the call.
  virtual void on_tap(const Site& site, const TapTensor& t) = 0;
  // The k of a logits summary the hook takes instead of whole logits rows; 0 (the default): whole
  // rows only. A backend that summarises where the logits are (CUDA, on the device) then calls
  // on_logits instead of on_tap for the wanted logits site; the CPU hands over whole rows.
  virtual int logits_summary_k() const { return 0; }
  virtual void on_logits(const LogitsSummary& /*summary*/) {}
};

// The first phase of the hook: which sites it wants, asked once per site.
struct WantedSites {
  bool embed = false, final_norm = false, logits = false;
  std::vector<std::array<bool, kLayerSiteCount>> layer;  // [layer][layer_site_index(kind)]

  // Asks `hook` about every site of an n_layers model (null hook: nothing is wanted).
  void ask(TapHook* hook, int n_layers);
  bool at(int l, SiteKind kind) const { return layer[l][layer_site_index(kind)]; }
  int hidden_sites() const;  // wanted sites other than the logits
};

}  // namespace ds
