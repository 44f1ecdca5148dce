// Text made safe for an HTML page: markup characters escaped, invalid UTF-8 and control
// characters replaced by visible stand-ins, so that any token, prompt or path shows as text.
#pragma once

#include <string>
#include <string_view>

namespace ds::viewer {

// `s` as HTML text or a quoted attribute value: & < > " ' become entities; a byte sequence that is
// not valid UTF-8 (stray continuation, overlong form, surrogate, beyond U+10FFFF, truncated)
// becomes U+FFFD per maximal invalid byte; C0 controls other than tab and newline, and DEL,
// become their Control Pictures (U+2400 + c, U+2421); C1 controls (U+0080..U+009F) become U+FFFD.
std::string html_escape(std::string_view s);

// A token or short text as a visible literal: JSON-quoted (newlines as \n, other controls as
// \uXXXX), then HTML-escaped; the terminal report shows tokens the same way.
std::string html_quote(std::string_view s);

}  // namespace ds::viewer
