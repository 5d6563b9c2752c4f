// RFC 3339 dates and times (years 0001-9999 and days per month respected, February to the
// 28th: never a date Python's date.fromisoformat refuses), RFC 4122 UUIDs, a dot-atom email
// address, dotted-quad IPv4.
#include "grammar/json_formats.h"

namespace myriad::grammar {
namespace {
// Years 0001-9999; 29 February in leap years only (a multiple of 4 but not of 100, or of 400).
const char* kDate =
    "(?:(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)-(?:(?:0[13578]|1[02])-(?:0[1-9]|"
    "[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    "|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29)";
const char* kTime =
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):"
    "[0-5][0-9])";
const char* kAtom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const char* kLabel = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const char* kOctet = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const char* kHex16 = "[0-9A-Fa-f]{1,4}";
// RFC 3339 appendix A: a week, or a date part (days; months then days; years then months then
// days) and a time part (hours, minutes, seconds likewise), or a time part alone.
const char* kDuration =
    "P(?:[0-9]+W|(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:T(?:[0-9]+H(?:"
    "[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?|T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-"
    "9]+M(?:[0-9]+S)?|[0-9]+S))";
// RFC 3986's absolute URI (scheme ":" hier-part, query, fragment) with a registered name or IPv4
// address as host (no bracketed IP literal: stricter than the format, never looser).
const char* kPchar = "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";
const char* kRegName = "(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*";
const char* kUserInfo = "(?:[A-Za-z0-9._~!$&'()*+,;=:-]|%[0-9A-Fa-f]{2})*@";

// IPv6 text forms (RFC 4291 section 2.2): eight groups, or fewer around one "::", the last 32
// bits maybe as an IPv4 address.
std::string ipv6() {
    const std::string h = kHex16, o = kOctet;
    const std::string ls32 = "(?:" + h + ":" + h + "|(?:" + o + "\\.){3}" + o + ")";
    auto groups = [&](int n) {  // n groups each followed by ':'
        return n == 0 ? std::string() : "(?:" + h + ":){" + std::to_string(n) + "}";
    };
    auto before = [&](int most) {  // up to `most` + 1 groups before "::"
        return most == 0 ? "(?:" + h + ")?"
                         : "(?:(?:" + h + ":){0," + std::to_string(most) + "}" + h + ")?";
    };
    std::string alts = groups(6) + ls32;
    alts += "|::" + groups(5) + ls32;
    for (int right = 4; right >= 0; --right)
        alts += "|" + before(4 - right) + "::" + groups(right) + ls32;
    alts += "|" + before(5) + "::" + h;
    alts += "|" + before(6) + "::";
    return "(?:" + alts + ")";
}
}  // namespace

std::optional<std::string> format_pattern(std::string_view f) {
    std::string date = kDate, time = kTime;
    if (f == "date") return "^" + date + "$";
    if (f == "time") return "^" + time + "$";
    if (f == "date-time") return "^" + date + "[Tt]" + time + "$";
    if (f == "uuid")
        return "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
    if (f == "email") {
        std::string atom = kAtom, label = kLabel;
        return "^" + atom + "(?:\\." + atom + ")*@" + label + "(?:\\." + label + ")+$";
    }
    if (f == "ipv4") {
        std::string o = kOctet;
        return "^(?:" + o + "\\.){3}" + o + "$";
    }
    if (f == "ipv6") return "^" + ipv6() + "$";
    if (f == "duration") return std::string("^") + kDuration + "$";
    if (f == "uri") {
        const std::string pchar = kPchar, o = kOctet;
        const std::string path = "(?:/" + pchar + "*)*";
        const std::string authority =
            "(?:" + std::string(kUserInfo) + ")?" + kRegName + "(?::[0-9]*)?";
        const std::string hier = "(?://" + authority + path + "|/(?:" + pchar + "+" + path + ")?|" +
                                 pchar + "+" + path + ")?";
        return "^[A-Za-z][A-Za-z0-9+.-]*:" + hier + "(?:\\?(?:" + pchar +
               "|[/?])*)?(?:#(?:" + pchar + "|[/?])*)?$";
    }
    return std::nullopt;
}

}  // namespace myriad::grammar
