// Shadow layers (driftscope attribute, docs/metrics.md §10): inside a run's own forward passes,
// a copy of one layer (or of its MLP, or of the final norm and LM head) recomputed on a
// reference trace's recorded inputs for the same (slot, position) rows, with its own residual
// buffer and KV cache, its taps handed to the source. The real pass is left untouched.
#pragma once

#include "src/runtime/taps.h"

namespace ds {

// Which shadow a tap belongs to.
enum class ShadowKind {
  layer,  // layer l on the reference's input of layer l (embed, or L<l-1>/out)
  mlp,    // the MLP of layer l on the reference's L<l>/resid_mid
  head,   // final norm and LM head on the reference's L<n-1>/out
};

class ShadowSource {
 public:
  virtual ~ShadowSource() = default;
  // Asked once when the source is set: which shadows to run.
  virtual bool wants(ShadowKind kind, int layer) = 0;
  // The reference's recorded rows of `site` at the rows (slot[r], pos[r]), r < rows, into out
  // (rows, width) as float32. Throws ds::Error when it does not have them.
  virtual void reference_rows(const Site& site, const int* slot, const int* pos, int rows,
                              int width, float* out) = 0;
  // Every site of a shadow (all of the layer's sites; final_norm and logits for the head),
  // as the real run's taps are handed over.
  virtual void on_shadow_tap(ShadowKind kind, const Site& site, const TapTensor& t) = 0;
};

}  // namespace ds
