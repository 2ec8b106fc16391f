// The global functions a chat template can call, as Hugging Face provides
// them: jinja2's range / dict / namespace, plus raise_exception(message) and
// strftime_now(format).
#pragma once

#include <ctime>
#include <optional>

#include "jinja/value.h"

namespace ladder::jinja {

// `now` fixes strftime_now's time (tests); unset reads the clock at each call.
Dict make_globals(std::optional<std::time_t> now);

}  // namespace ladder::jinja
