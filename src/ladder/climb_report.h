// climb.html: every rung of one climb side by side, in one offline page
// (inline SVG, no script, no network): the verdict first; per rung its
// decision and the reason in numbers; goodput fraction with its run-level
// interval and goodput per second; the paired goodput change of each
// candidate with its interval against zero; TTFT and E2E percentiles;
// quality per slice against each slice's margin (a slice below it is marked
// and named); cost per verified task; and the records every figure came from.
// A climb over several loads gets a goodput-by-load table and one such
// section per load.
#pragma once

#include <string>

namespace ladder::climb {

struct ClimbResult;

std::string make_climb_report(const ClimbResult& result);

}  // namespace ladder::climb
