// The SVG pictures of the HTML report: a layers × positions heat map on a log colour scale with
// its legend, line charts over positions (margins, KL, Jaccard), and a histogram of first-flip
// steps. Long sequences are binned into at most a fixed number of columns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diff/report.h"
#include "viewer/position_bins.h"

namespace ds::viewer {

// Number of colour classes of the heat map (CSS classes h0..h<kHeatClasses-1>).
inline constexpr int kHeatClasses = 12;

// The heat map of the layer view: one row per layer, the maximum relative L2 of each column's
// positions (NaN wins), coloured by log10 between the decades around the smallest value above
// the noise floor and the largest; zero, at-or-below-floor and NaN have their own colours. The
// column of `flip_row` is outlined. Hover details come from each row's data-v values.
// `unit` names the values in the legend ("rel. L2"), `floor_label` the floor's colour ("≤ noise
// floor 1.2e-07"); the diff against a noise floor draws a second map in floor units (÷ the
// replays' median relative L2 of the row's site and position bucket) with the floor at 1.
std::string svg_heat_map(const std::vector<diff::LayerDrift>& layers, double noise_floor,
                         const Binning& bins, std::optional<int64_t> flip_row,
                         const std::string& unit = "rel. L2", const std::string& floor_label = {});

struct Series {
  std::vector<double> y;  // one per column; NaN leaves a gap
  std::string css;        // class of the polyline ("a", "b")
  std::string name;       // legend text
};

struct LineChart {
  std::string css;      // class of the <svg> ("margin", "kl", "jaccard")
  std::string y_label;  // axis title
  bool log_y = false;   // log10 axis; values <= 0 are drawn at the bottom
  double y_min = 0, y_max = 1;
  std::vector<Series> series;
  std::vector<bool> highlight;  // per column: a red band (at-risk rows)
  std::string highlight_name;   // legend text of the bands
  std::optional<int64_t> flip_row;
};

std::string svg_line_chart(const LineChart& c, const Binning& bins);

// First-flip steps of the diverged sequences as a histogram over [0, max_step].
std::string svg_flip_histogram(const std::vector<int>& steps, int max_step);

}  // namespace ds::viewer
