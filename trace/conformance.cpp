// Format v1 conformance of a foreign trace: root and /meta attributes, then every /seq group.
#include "trace/conformance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "common/error.h"
#include "trace/h5.h"
#include "trace/schema.h"

namespace ds::trace {
namespace {

class Checker {
 public:
  Checker(hid_t file, std::string path, std::string producer, KeepDataset keep = {})
      : file_(file),
        path_(std::move(path)),
        producer_(std::move(producer)),
        keep_(std::move(keep)) {}

  bool status_may_be_lost = false;  // check_sequence's option

  [[noreturn]] void fail(const std::string& what) const {
    if (producer_.empty()) throw Error(what);  // check_sequence: the reader names the trace
    throw Error(fmt::format("trace '{}' (written by {}) does not conform to format v1: {}", path_,
                            producer_, what),
                "docs/trace-format.md is the specification; fix the writer that produced it");
  }

  // The object `name` under `loc`, opened once (an object header read is most of what checking
  // costs), with its kind: H5I_GROUP, H5I_DATASET, ..., or H5I_BADID when there is none.
  struct Object {
    h5::Id id;
    H5I_type_t kind = H5I_BADID;
  };
  // The object `name` under `loc`; kind H5I_BADID when there is no such link. A link whose object
  // cannot be opened (a damaged header) is damage, never taken for an absent optional group.
  Object object(hid_t loc, const std::string& name) const {
    Object o{h5::Id(H5Oopen(loc, name.c_str(), H5P_DEFAULT))};
    if (o.id) {
      o.kind = H5Iget_type(o.id.get());
    } else if (const std::string why = h5::last_error();
               H5Lexists(loc, name.c_str(), H5P_DEFAULT) != 0) {
      fail(fmt::format("'{}' cannot be opened ({})", name, why));
    }
    return o;
  }
  H5I_type_t kind(hid_t loc, const std::string& name) const { return object(loc, name).kind; }

  std::string string_attr(hid_t obj, const std::string& where, const char* name) const {
    if (!h5::has_attr(obj, name)) fail(fmt::format("{} lacks the attribute {}", where, name));
    try {
      return h5::read_attr_string(obj, name);
    } catch (const Error& e) {
      const std::string why = e.what();  // its bytes unreadable (a file cut short), or no string
      if (why.starts_with("cannot read")) fail(fmt::format("{}@{}: {}", where, name, why));
      fail(fmt::format("attribute {}@{} is not a string", where, name));
    }
  }

  int64_t int_attr(hid_t obj, const std::string& where, const char* name) const {
    if (!h5::has_attr(obj, name)) fail(fmt::format("{} lacks the attribute {}", where, name));
    try {
      return h5::read_attr_int(obj, name);
    } catch (const Error&) {
      fail(fmt::format("attribute {}@{} is not an integer", where, name));
    }
  }

  // The dataset `rel` under `loc`: its shape and element type, or a failure naming it. `keep_as`
  // is its path under the sequence group, for keep_.
  h5::DatasetInfo dataset(hid_t loc, const std::string& where, const std::string& rel,
                          const std::string& keep_as = {}) const {
    const std::string name = where + "/" + rel;
    // one open (an object header read is most of what checking a dataset costs)
    h5::Id d(H5Oopen(loc, rel.c_str(), H5P_DEFAULT));
    if (!d || H5Iget_type(d.get()) != H5I_DATASET) {
      fail(fmt::format("{} is missing or not a dataset", name));
    }
    h5::DatasetInfo info;
    try {
      info = h5::dataset_info(d.get());
    } catch (const Error& e) {
      fail(fmt::format("{}: {}", name, e.what()));
    }
    if (keep_ && !keep_as.empty()) keep_(keep_as, info.elem, std::move(d));
    return info;
  }

  void expect(const h5::DatasetInfo& info, const std::string& name, std::set<NumberFormat> elems,
              size_t rank) const {
    if (!elems.count(info.elem)) {
      fail(fmt::format("{} holds {} values", name, traits(info.elem).trace_name));
    }
    if (info.shape.size() != rank) {
      fail(fmt::format("{} has rank {}, expected {}", name, info.shape.size(), rank));
    }
  }

  void root() const {
    const std::string tool = string_attr(file_, "/", "tool_version");
    (void)tool;
    const int64_t complete = int_attr(file_, "/", "complete");
    if (complete != 0 && complete != 1)
      fail(fmt::format("attribute /@complete is {}, not 0 or 1", complete));
    const std::string stop = string_attr(file_, "/", "stop_reason");
    if (stop != "finished" && stop != "interrupted" && stop != "running") {
      fail(fmt::format("attribute /@stop_reason is '{}', not finished, interrupted or running",
                       stop));
    }
    if (kind(file_, kMetaGroup) != H5I_GROUP) fail("/meta is missing or not a group");
    h5::Id meta = h5::open_group(file_, kMetaGroup);
    for (const char* a : {"config_json", "model_json", "env_json"}) {
      const std::string text = string_attr(meta.get(), "/meta", a);
      const auto j = nlohmann::json::parse(text, nullptr, false);
      if (!j.is_object()) fail(fmt::format("attribute /meta@{} is not a JSON object", a));
    }
    string_attr(meta.get(), "/meta", "command_line");
    if (kind(file_, kSeqGroup) != H5I_GROUP) fail("/seq is missing or not a group");
  }

  void sequences() const {
    h5::Id seq = h5::open_group(file_, kSeqGroup);
    for (const auto& name : h5::list_children(seq.get())) {
      const bool digits = !name.empty() &&
                          name.find_first_not_of("0123456789") == std::string::npos &&
                          (name == "0" || name[0] != '0');
      if (!digits) fail(fmt::format("/seq/{} is not named by a sequence index", name));
      if (kind(seq.get(), name) != H5I_GROUP) fail(fmt::format("/seq/{} is not a group", name));
      h5::Id g = h5::open_group(seq.get(), name);
      sequence(g.get(), "/seq/" + name);
    }
  }

  void sequence(hid_t g, const std::string& where) const {
    const int64_t prompt_len = int_attr(g, where, "prompt_len");
    const int64_t gen_len = int_attr(g, where, "gen_len");
    std::string stop;
    try {
      stop = string_attr(g, where, "stop_reason");
    } catch (const Error&) {
      if (!status_may_be_lost) throw;
      stop = "running";  // lost past the cut: read as a cut run's, by gen_len
    }
    static const std::set<std::string> reasons = {"eos",    "max_new",     "context",
                                                  "forced", "interrupted", "running"};
    if (!reasons.count(stop)) fail(fmt::format("attribute {}@stop_reason is '{}'", where, stop));
    if (prompt_len < 1 || gen_len < 0 || prompt_len > kMaxSequenceTokens ||
        gen_len > kMaxSequenceTokens) {
      fail(fmt::format("{}@prompt_len {} / gen_len {} out of range", where, prompt_len, gen_len));
    }
    const auto tokens = dataset(g, where, kTokensDataset, kTokensDataset);
    expect(tokens, where + "/tokens", {NumberFormat::i32}, 1);
    const int64_t T = tokens.shape[0];
    if (T > kMaxSequenceTokens) {
      fail(fmt::format("{}/tokens holds {} tokens, more than the {} of the longest context", where,
                       T, kMaxSequenceTokens));
    }
    // A sequence cut by a kill or a full disk still says "running" (docs/trace-format.md, "Crash
    // consistency"): gen_len counts its committed tokens, and its datasets may hold rows written
    // after the last flush point, unequal in number. Only the committed part must be there.
    const bool cut = stop == "running";
    const int64_t committed_tokens = prompt_len + gen_len;
    if (cut ? T < committed_tokens : T != committed_tokens) {
      fail(fmt::format("{}/tokens holds {} tokens, prompt_len + gen_len = {}", where, T,
                       committed_tokens));
    }
    const int64_t committed_rows = gen_len > 0 ? committed_tokens - 1 : 0;
    int64_t R = -1;
    std::string first;  // the dataset that fixed R
    auto rows = [&](const std::string& name, int64_t r) {
      if (cut) {
        if (r < committed_rows) {
          fail(fmt::format("{} has {} rows, fewer than the {} committed (gen_len {})", name, r,
                           committed_rows, gen_len));
        }
        return;
      }
      if (R < 0) {
        R = r;
        first = name;
      } else if (r != R) {
        fail(fmt::format("{} has {} rows, {} has {}", name, r, first, R));
      }
    };
    if (Object h = object(g, kHiddenGroup); h.kind == H5I_GROUP)
      hidden(h.id.get(), where, rows);
    else if (h.kind != H5I_BADID)
      fail(where + "/hidden is not a group");
    if (Object lg = object(g, kLogitsGroup); lg.kind == H5I_GROUP)
      logits(lg.id.get(), where, rows);
    else if (lg.kind != H5I_BADID)
      fail(where + "/logits is not a group");
    if (R >= 0) {
      const bool ok = R == T - 1 || (R == T && T == prompt_len) || (R == 0 && T == prompt_len);
      if (!ok) {
        fail(
            fmt::format("{} has {} rows for {} tokens (prompt {}): rows must be tokens - 1, or "
                        "prompt_len with --max-new 0, or 0",
                        first, R, T, prompt_len));
      }
    }
  }

  template <typename Rows>
  void hidden(hid_t hidden_group, const std::string& where, Rows& rows) const {
    const hid_t h = hidden_group;
    const std::string base = where + "/hidden";
    const std::set<NumberFormat> floats = {NumberFormat::f32, NumberFormat::f16,
                                           NumberFormat::bf16};
    int64_t width = -1;
    auto site = [&](hid_t loc, const std::string& rel, const std::string& name) {
      const auto info = dataset(loc, base, rel, hidden_path(rel));
      expect(info, name, floats, 2);
      if (info.shape[1] > kMaxHiddenWidth) {
        fail(fmt::format("{} is {} wide, more than the {} of the widest model", name, info.shape[1],
                         kMaxHiddenWidth));
      }
      if (width >= 0 && info.shape[1] != width) {
        fail(fmt::format("{} is {} wide, other sites {}", name, info.shape[1], width));
      }
      width = info.shape[1];
      rows(name, info.shape[0]);
    };
    for (const auto& child : h5::list_children(h)) {
      const std::string name = base + "/" + child;
      if (child == kEmbedSite || child == kFinalNormSite) {
        site(h, child, name);
      } else if (child.size() > 1 && child[0] == 'L' &&
                 child.find_first_not_of("0123456789", 1) == std::string::npos) {
        const Object layer = object(h, child);
        if (layer.kind != H5I_GROUP) fail(name + " is not a group of layer sites");
        for (const auto& k : h5::list_children(layer.id.get())) {
          bool known = false;
          for (const char* kk : kLayerSiteKinds) known |= k == kk;
          if (!known) {
            fail(
                fmt::format("{}/{} is not a site (layer sites: attn_norm, attn_out, resid_mid, "
                            "mlp_norm, mlp_out, out)",
                            name, k));
          }
          site(h, child + "/" + k, name + "/" + k);
        }
      } else {
        fail(fmt::format("{} is not a site (embed, L<l>/..., final_norm)", name));
      }
    }
  }

  template <typename Rows>
  void logits(hid_t logits_group, const std::string& where, Rows& rows) const {
    const std::string base = where + "/logits";
    const hid_t lg = logits_group;
    for (const auto& child : h5::list_children(lg)) {
      if (std::find(std::begin(kLogitsDatasets), std::end(kLogitsDatasets), child) ==
          std::end(kLogitsDatasets)) {
        fail(fmt::format("{}/{} is not part of format v1 (topk_ids, topk_logits, lse, full)", base,
                         child));
      }
    }
    const auto ids = dataset(lg, base, kTopkIds, logits_path(kTopkIds));
    expect(ids, base + "/topk_ids", {NumberFormat::i32}, 2);
    const auto vals = dataset(lg, base, kTopkLogits, logits_path(kTopkLogits));
    expect(vals, base + "/topk_logits", {NumberFormat::f32}, 2);
    const auto lse = dataset(lg, base, kLse, logits_path(kLse));
    expect(lse, base + "/lse", {NumberFormat::f32}, 1);
    if (ids.shape[1] > kMaxLogitsWidth) {
      fail(fmt::format("{}/topk_ids has K = {}, more than the {} of the largest vocabulary", base,
                       ids.shape[1], kMaxLogitsWidth));
    }
    if (ids.shape[1] < 1 || vals.shape[1] != ids.shape[1]) {
      fail(fmt::format("{}/topk_logits has K = {}, topk_ids K = {}", base, vals.shape[1],
                       ids.shape[1]));
    }
    rows(base + "/topk_ids", ids.shape[0]);
    rows(base + "/topk_logits", vals.shape[0]);
    rows(base + "/lse", lse.shape[0]);
    if (kind(lg, kFullLogits) != H5I_BADID) {
      const auto full = dataset(lg, base, kFullLogits, logits_path(kFullLogits));
      expect(full, base + "/full", {NumberFormat::f32}, 2);
      if (full.shape[1] > kMaxLogitsWidth) {
        fail(fmt::format("{}/full has {} columns, more than the {} of the largest vocabulary", base,
                         full.shape[1], kMaxLogitsWidth));
      }
      if (full.shape[1] < ids.shape[1]) {
        fail(fmt::format("{}/full has {} columns, fewer than K = {}", base, full.shape[1],
                         ids.shape[1]));
      }
      rows(base + "/full", full.shape[0]);
    }
  }

 private:
  hid_t file_;
  std::string path_, producer_;
  KeepDataset keep_;
};

}  // namespace

void check_sequence(hid_t group, const std::string& where, const KeepDataset& keep,
                    bool status_may_be_lost) {
  Checker c(group, "", "", keep);
  c.status_may_be_lost = status_may_be_lost;
  c.sequence(group, where);
}

void check_conformance(hid_t file, const std::string& path, const std::string& producer) {
  Checker c(file, path, producer);
  c.root();
  c.sequences();
}

}  // namespace ds::trace
