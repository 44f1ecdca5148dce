// Kernels that differ, by site: aggregation of two /kernels tables over their common passes.
#include "diff/kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "common/error.h"
#include "trace/schema.h"

namespace ds::diff {
namespace {

using trace::KernelRecord;
using Key = std::pair<std::string, std::string>;                           // (op, name)
using Config = std::pair<std::array<int32_t, 3>, std::array<int32_t, 3>>;  // (grid, block)

// One (op, name) at one site on one side.
struct Kernel {
  size_t first = 0;  // row of its first launch: orders kernels as they were launched
  int64_t launches = 0, duration_ns = 0;
  std::map<Config, int64_t> configs;  // launches per configuration
};

struct Site {
  std::map<Key, Kernel> kernels;
  int64_t launches = 0, duration_ns = 0;
};

struct Side {
  std::map<std::string, Site> sites;
  int64_t duration_ns = 0;
};

std::set<int32_t> passes_of(const std::vector<KernelRecord>& records) {
  std::set<int32_t> p;
  for (const auto& r : records) p.insert(r.pass);
  return p;
}

Side aggregate(const std::vector<KernelRecord>& records, const std::set<int32_t>& passes) {
  Side side;
  for (size_t i = 0; i < records.size(); ++i) {
    const KernelRecord& r = records[i];
    if (!passes.count(r.pass)) continue;
    Site& site = side.sites[r.site];
    auto [it, added] = site.kernels.try_emplace(Key{r.op, r.name});
    Kernel& k = it->second;
    if (added) k.first = i;
    ++k.launches;
    k.duration_ns += r.duration_ns;
    ++k.configs[Config{r.grid, r.block}];
    ++site.launches;
    site.duration_ns += r.duration_ns;
    side.duration_ns += r.duration_ns;
  }
  return side;
}

KernelUse use_of(const Key& key, const Kernel& k) {
  KernelUse u;
  u.op = key.first;
  u.name = key.second;
  u.launches = k.launches;
  u.duration_ns = k.duration_ns;
  for (const auto& [config, n] : k.configs) u.configs.push_back({config.first, config.second, n});
  return u;
}

// The largest median relative L2 of each site over the sequences (a NaN wins: NaN always fails).
std::map<std::string, double> site_drift(const std::vector<SequenceReport>& sequences) {
  std::map<std::string, double> out;
  for (const auto& s : sequences) {
    for (const auto& d : s.drift) {
      auto [it, added] = out.try_emplace(d.site, d.rel_l2_median);
      if (!added && !std::isnan(it->second) &&
          (std::isnan(d.rel_l2_median) || d.rel_l2_median > it->second)) {
        it->second = d.rel_l2_median;
      }
    }
  }
  return out;
}

}  // namespace

KernelReport diff_kernels(const std::vector<KernelRecord>& a, const std::vector<KernelRecord>& b,
                          const std::vector<SequenceReport>& sequences) {
  KernelReport rep;
  rep.tables = KernelTables::both;
  rep.records_a = static_cast<int64_t>(a.size());
  rep.records_b = static_cast<int64_t>(b.size());
  const auto pa = passes_of(a), pb = passes_of(b);
  rep.passes_a = static_cast<int>(pa.size());
  rep.passes_b = static_cast<int>(pb.size());
  std::set<int32_t> common;
  std::set_intersection(pa.begin(), pa.end(), pb.begin(), pb.end(),
                        std::inserter(common, common.end()));
  rep.passes_compared = static_cast<int>(common.size());
  const Side A = aggregate(a, common), B = aggregate(b, common);
  rep.duration_ns_a = A.duration_ns;
  rep.duration_ns_b = B.duration_ns;

  std::vector<std::string> sites;
  for (const auto& [name, s] : A.sites) sites.push_back(name);
  for (const auto& [name, s] : B.sites) {
    if (!A.sites.count(name)) sites.push_back(name);
  }
  std::sort(sites.begin(), sites.end(), [](const std::string& x, const std::string& y) {
    return std::pair(trace::site_order(x), x) < std::pair(trace::site_order(y), y);
  });
  rep.sites_compared = static_cast<int>(sites.size());
  const auto drift = site_drift(sequences);
  const Site none;
  for (const auto& name : sites) {
    const auto ia = A.sites.find(name), ib = B.sites.find(name);
    const Site& sa = ia == A.sites.end() ? none : ia->second;
    const Site& sb = ib == B.sites.end() ? none : ib->second;
    SiteKernels out;
    out.site = name;
    out.launches_a = sa.launches;
    out.launches_b = sb.launches;
    out.duration_ns_a = sa.duration_ns;
    out.duration_ns_b = sb.duration_ns;
    std::vector<std::pair<size_t, KernelUse>> only_a, only_b;
    std::vector<std::pair<size_t, KernelChange>> changed;
    for (const auto& [key, ka] : sa.kernels) {
      const auto kb = sb.kernels.find(key);
      if (kb == sb.kernels.end()) {
        only_a.emplace_back(ka.first, use_of(key, ka));
      } else if (ka.configs != kb->second.configs) {
        changed.emplace_back(ka.first, KernelChange{use_of(key, ka), use_of(key, kb->second)});
      }
    }
    for (const auto& [key, kb] : sb.kernels) {
      if (!sa.kernels.count(key)) only_b.emplace_back(kb.first, use_of(key, kb));
    }
    if (only_a.empty() && only_b.empty() && changed.empty()) continue;
    auto launch_order = [](auto& v, auto& dst) {
      std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (auto& [first, item] : v) dst.push_back(std::move(item));
    };
    launch_order(only_a, out.only_a);
    launch_order(only_b, out.only_b);
    launch_order(changed, out.changed);
    if (const auto d = drift.find(name); d != drift.end()) out.rel_l2_median = d->second;
    rep.sites.push_back(std::move(out));
  }
  return rep;
}

KernelReport diff_kernels(const trace::TraceReader& a, const trace::TraceReader& b,
                          const std::vector<SequenceReport>& sequences,
                          std::vector<std::string>& warnings) {
  auto read = [&](const trace::TraceReader& t,
                  const char* side) -> std::optional<std::vector<KernelRecord>> {
    if (!t.has_kernels()) return std::nullopt;
    try {
      return t.kernels();
    } catch (const Error& e) {
      warnings.push_back(
          fmt::format("{}'s kernel table is unreadable, kernels not compared: {}", side, e.what()));
      return std::nullopt;
    }
  };
  const auto ka = read(a, "A"), kb = read(b, "B");
  if (ka && kb) return diff_kernels(*ka, *kb, sequences);
  KernelReport rep;
  rep.tables = ka ? KernelTables::only_a : kb ? KernelTables::only_b : KernelTables::neither;
  const auto* k = ka ? &*ka : kb ? &*kb : nullptr;
  if (k) {
    (ka ? rep.records_a : rep.records_b) = static_cast<int64_t>(k->size());
    (ka ? rep.passes_a : rep.passes_b) = static_cast<int>(passes_of(*k).size());
  }
  return rep;
}

}  // namespace ds::diff
