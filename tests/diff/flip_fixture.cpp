// The hand-built zoomed pairs (see tests/diff/flip_fixture.h).
#include "tests/diff/flip_fixture.h"

#include <optional>
#include <string>

namespace ds::test {
namespace {

constexpr int kPromptLen = 2;
constexpr double kFloor = 1e-3;      // the attribution's (of the local error)
constexpr double kSiteFloor = 3e-3;  // the diff's, of each layer view's site (of the drift)

// A sequence with `rows` compared rows; layer view values at `row` (the rest 0).
diff::SequenceReport sequence(int index, int64_t row, double l0, double l1) {
  diff::SequenceReport s;
  s.index = index;
  s.prompt_len_a = s.prompt_len_b = kPromptLen;
  s.has_logits = true;
  s.positions.resize(14);
  s.verdict = diff::Verdict::drift;
  const std::string sites[] = {"L0/out", "L1/out"};
  const double at_row[] = {l0, l1};
  for (int l = 0; l < 2; ++l) {
    diff::LayerDrift d;
    d.layer = l;
    d.site = sites[l];
    d.rel_l2.assign(14, 0.0f);
    d.rel_l2[static_cast<size_t>(row)] = static_cast<float>(at_row[l]);
    s.layers.push_back(d);
    diff::SiteDrift sd;
    sd.site = sites[l];
    sd.layer = l;
    sd.dtype = "float16";
    sd.noise_floor = kSiteFloor;
    s.drift.push_back(sd);
  }
  return s;
}

void flip(diff::SequenceReport& s, int step, double margin, double drift) {
  diff::FirstFlip f;
  f.step = step;
  f.position = kPromptLen + step;
  f.row = f.position - 1;
  f.margin_logit_a = margin;
  f.margin_logit_b = -margin / 2;
  s.first_flip = f;
  s.positions[static_cast<size_t>(f.row)].margin_logit_a = margin;
  s.positions[static_cast<size_t>(f.row)].logit_drift = drift;
  s.verdict = diff::Verdict::flip;
}

void onset(diff::SequenceReport& s, const std::string& site) {
  s.onset = diff::Onset{site, 1, 2 * kSiteFloor, kSiteFloor};
}

diff::BlockError block(const std::string& name, const std::string& kind, int layer) {
  diff::BlockError b;
  b.name = name;
  b.kind = kind;
  b.layer = layer;
  return b;
}

}  // namespace

std::vector<diff::ZoomedPair> FlipFixture::pairs() const {
  std::vector<diff::ZoomedPair> p;
  for (int s = 0; s < 5; ++s) p.push_back({&report, &attribution, s});
  return p;
}

FlipFixture flip_fixture() {
  FlipFixture f;
  auto& seqs = f.report.sequences;
  seqs.push_back(sequence(0, 3, 1e-4, 5e-4));
  flip(seqs[0], 2, 0.01, 0.02);
  onset(seqs[0], "L0/attn_out");
  seqs.push_back(sequence(1, 3, 2e-3, 4e-3));  // teacher-forced: top-1 differs at rows 0 and 3
  seqs[1].positions[0].top1_differs = true;
  seqs[1].positions[3].top1_differs = true;
  seqs[1].positions[3].margin_logit_a = 0.3;
  seqs[1].positions[3].margin_logit_b = -0.1;
  seqs[1].positions[3].logit_drift = 0.2;
  onset(seqs[1], "L1/mlp_out");
  seqs.push_back(sequence(2, 11, 0, 5e-3));
  flip(seqs[2], 10, 0.02, 0.05);
  onset(seqs[2], "L0/resid_mid");
  seqs.push_back(sequence(3, 3, 1e-2, 1e-2));  // drift without flip
  onset(seqs[3], "L0/attn_out");
  seqs.push_back(sequence(4, 6, 1e-2, 1e-2));
  flip(seqs[4], 5, 6.0, 4.0);

  auto& a = f.attribution;
  a.storage = "bf16";
  a.noise_floor = kFloor;
  a.split = true;
  a.n_layers = 2;
  a.sequences = 5;
  a.sequence_ids = {0, 1, 2, 3, 4};
  a.blocks = {
      block("L0 attention", "attention", 0), block("L0 mlp", "mlp", 0),    block("L0", "layer", 0),
      block("L1 attention", "attention", 1), block("L1 mlp", "mlp", 1),    block("L1", "layer", 1),
      block("final_norm", "final_norm", -1), block("logits", "logits", -1)};
  a.ranking = {4, 3, 0, 1, 6};  // the verdict blocks (order by pooled local: not used here)
  // local error per sequence 0..4 of each block
  const std::vector<std::vector<double>> local = {
      {5e-3, 1e-4, 0, 0, 0},           // L0 attention
      {1e-4, 2e-3, 0, 0, 0},           // L0 mlp
      {1e-3, 2e-3, 3e-3, 4e-3, 5e-3},  // L0 (whole layer)
      {2e-3, 1e-2, 4e-3, 0, 0},        // L1 attention
      {8e-3, 0, 0, 0, 0},              // L1 mlp
      {2e-3, 4e-3, 6e-3, 8e-3, 1e-2},  // L1 (whole layer)
      {0, 0, 0, 0, 0},                 // final_norm
      {1, 1, 1, 1, 1},                 // logits (KL; not a verdict block)
  };
  for (size_t i = 0; i < a.blocks.size(); ++i) {
    a.blocks[i].local_by_seq = local[i];
    a.blocks[i].total_by_seq = local[i];
  }
  return f;
}

}  // namespace ds::test
