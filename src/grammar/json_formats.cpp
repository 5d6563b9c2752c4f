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
    return std::nullopt;
}

}  // namespace myriad::grammar
