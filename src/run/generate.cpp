// The generation loop over a Runtime: prefill plans, co-batched decode, stop rules.
#include "src/run/generate.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.h"

namespace ds {

int needed_capacity(int prompt_len, int max_new, int context_len) {
  return std::max(1, std::min(context_len, prompt_len + std::max(0, max_new)));
}

namespace {

struct Active {
  int index;
  GenerateResult res;
  int generated = 0;
  bool done = false;
};

}  // namespace

std::vector<GenerateResult> generate_batch(Runtime& rt, const std::vector<SequenceRequest>& requests,
                                           const GenerateOptions& opt,
                                           const StepCallback& on_step) {
  if (opt.max_new < 0) {
    throw Error(fmt::format("max_new {} is negative", opt.max_new), "--max-new takes N >= 0");
  }
  if (opt.prefill_chunk < 0) {
    throw Error(fmt::format("prefill_chunk {} is negative", opt.prefill_chunk),
                "--prefill-chunk takes 0 (whole prompt) or N >= 1");
  }
  validate(opt.sampling);
  if (static_cast<int>(requests.size()) > rt.slots()) {
    throw Error(fmt::format("{} sequences for a runtime with {} slots", requests.size(), rt.slots()));
  }
  const int ctx = std::min(rt.config().max_seq_len, rt.capacity());
  const int V = rt.config().vocab_size;
  std::vector<Active> seqs;
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& p = requests[i].prompt;
    if (p.empty()) {
      throw Error("the prompt is empty (no tokens to start from)",
                  "give --prompt TEXT or --prompt-ids, or let the tokenizer add BOS");
    }
    if (static_cast<int>(p.size()) > ctx) {
      throw Error(fmt::format("the prompt has {} tokens, more than the context of {} positions",
                              p.size(), ctx),
                  "shorten the prompt");
    }
    Active a{static_cast<int>(i), {}, 0, false};
    a.res.tokens = p;
    a.res.prompt_len = static_cast<int>(p.size());
    a.res.stop_reason = "max_new";
    seqs.push_back(std::move(a));
  }

  // ---- prefill: a list of passes, each a list of (sequence, first prompt row, row count) ----
  struct Part {
    int seq, begin, count;
  };
  std::vector<std::vector<Part>> passes;
  // Rows [b, e) of each listed sequence, in passes of at most `chunk` rows per sequence.
  auto plan = [&](const std::vector<int>& which, const std::vector<std::pair<int, int>>& ranges) {
    int longest = 0;
    for (const auto& [b, e] : ranges) longest = std::max(longest, e - b);
    const int chunk = opt.prefill_chunk > 0 ? opt.prefill_chunk : std::max(1, longest);
    for (int off = 0; off < longest; off += chunk) {
      std::vector<Part> pass;
      for (size_t k = 0; k < which.size(); ++k) {
        const auto [b, e] = ranges[k];
        const int cb = b + off, ce = std::min(e, b + off + chunk);
        if (cb < ce) pass.push_back({which[k], cb, ce - cb});
      }
      if (!pass.empty()) passes.push_back(std::move(pass));
    }
  };
  if (opt.prefix_cache) {
    for (auto& s : seqs) {  // each prefix alone, as an earlier request computed it
      if (s.res.prompt_len > 1) plan({s.index}, {{0, s.res.prompt_len - 1}});
    }
    std::vector<int> all;
    std::vector<std::pair<int, int>> last;
    for (auto& s : seqs) {
      all.push_back(s.index);
      last.push_back({s.res.prompt_len - 1, s.res.prompt_len});
    }
    plan(all, last);
  } else {
    std::vector<int> all;
    std::vector<std::pair<int, int>> whole;
    for (auto& s : seqs) {
      all.push_back(s.index);
      whole.push_back({0, s.res.prompt_len});
    }
    plan(all, whole);
  }

  std::vector<double> logits;
  std::vector<BatchRow> rows;
  std::vector<size_t> last_row(seqs.size(), 0);  // index of each sequence's last logits row

  // After a pass: every sequence whose step completed samples its next token; the noise is
  // drawn for (stream, number of tokens generated so far).
  auto finish_step = [&](const std::vector<int>& completed) {
    for (int i : completed) {
      Active& s = seqs[i];
      const auto& forced = requests[i].forced;
      if (forced ? forced->empty() : opt.max_new == 0) {
        if (on_step) on_step(i, std::nullopt, s.res.tokens);
        s.done = true;
        continue;
      }
      std::span<const double> row(logits.data() + last_row[i] * V, static_cast<size_t>(V));
      const int32_t next =
          forced ? (*forced)[s.generated]
                 : sample_next(row, opt.sampling, requests[i].stream, s.generated, s.res.tokens);
      s.res.tokens.push_back(next);
      ++s.generated;
      if (on_step) on_step(i, next, s.res.tokens);
      if (opt.eos_id && next == *opt.eos_id) {
        s.res.stop_reason = "eos";
        s.done = true;
      } else if (forced && s.generated == static_cast<int>(forced->size())) {
        s.res.stop_reason = "forced";
        s.done = true;
      } else if (!forced && s.generated == opt.max_new) {
        s.done = true;
      } else if (static_cast<int>(s.res.tokens.size()) >= ctx) {
        s.res.stop_reason = "context";  // the sequence fills the context
        s.done = true;
      }
    }
  };

  for (size_t p = 0; p < passes.size(); ++p) {
    rows.clear();
    std::vector<int> completed;
    for (const Part& part : passes[p]) {
      const auto& toks = seqs[part.seq].res.tokens;
      for (int r = part.begin; r < part.begin + part.count; ++r) rows.push_back({part.seq, r, toks[r]});
      last_row[part.seq] = rows.size() - 1;
      if (part.begin + part.count == seqs[part.seq].res.prompt_len) completed.push_back(part.seq);
    }
    rt.forward(rows, logits);
    finish_step(completed);
  }

  while (true) {
    rows.clear();
    std::vector<int> active;
    for (auto& s : seqs) {
      if (s.done) continue;
      active.push_back(s.index);
    }
    if (active.empty()) break;
    if (opt.should_stop && opt.should_stop()) {
      for (int i : active) seqs[i].res.stop_reason = "interrupted";
      break;
    }
    for (int i : active) {
      const auto& toks = seqs[i].res.tokens;
      rows.push_back({i, static_cast<int>(toks.size()) - 1, toks.back()});
      last_row[i] = rows.size() - 1;
    }
    rt.forward(rows, logits);
    finish_step(active);
  }
  std::vector<GenerateResult> out;
  for (auto& s : seqs) out.push_back(std::move(s.res));
  return out;
}

GenerateResult generate(Runtime& rt, std::span<const int32_t> prompt, const GenerateOptions& opt,
                        const TokenCallback& on_token) {
  std::vector<SequenceRequest> req{{std::vector<int32_t>(prompt.begin(), prompt.end()), opt.stream}};
  auto res = generate_batch(rt, req, opt,
                            [&](int, std::optional<int32_t> t, const std::vector<int32_t>& tokens) {
                              if (t && on_token) on_token(tokens);
                            });
  return std::move(res[0]);
}

}  // namespace ds
