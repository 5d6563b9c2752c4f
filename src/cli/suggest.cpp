#include "cli/suggest.h"

#include <fmt/format.h>

#include <algorithm>

namespace myriad::cli {

namespace {

// Optimal string alignment distance.
size_t distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[a.size()][b.size()];
}

std::vector<std::string> long_flags(const CLI::App& app) {
    std::vector<std::string> out;
    for (const CLI::Option* o : app.get_options())
        for (const std::string& name : o->get_lnames()) out.push_back("--" + name);
    return out;
}

}  // namespace

std::optional<std::string> nearest(std::string_view word, const std::vector<std::string>& names) {
    if (word.size() > 64) return std::nullopt;
    std::optional<std::string> best;
    size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
    for (const std::string& n : names) {
        const size_t d = distance(word, n);
        if (d < best_d) best = n, best_d = d;
    }
    return best;
}

std::string explain_unknown(const CLI::App& app, const std::vector<std::string>& argv) {
    // argv[0] is the program; the first word that is not a flag of the app names the command.
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
    size_t i = 1;
    while (i < argv.size() && argv[i].starts_with("-")) {
        if (argv[i] == "--") return "";
        ++i;
    }
    if (i == argv.size()) return "";
    const std::string& word = argv[i];
    const CLI::App* sub = nullptr;
    for (const CLI::App* s : app.get_subcommands({}))
        if (s->get_name() == word) sub = s;
    if (sub == nullptr) {
        std::string msg = fmt::format("unknown command '{}'", word);
        if (auto n = nearest(word, commands)) msg += fmt::format("; did you mean '{}'?", *n);
        return msg + " (myriad --help lists the commands)";
    }
    // The first --flag the subcommand (or a subcommand of it, such as service install) lacks.
    if (sub->get_allow_extras()) return "";
    std::vector<std::string> flags = long_flags(*sub);
    std::string where = sub->get_name();
    for (size_t k = i + 1; k < argv.size(); ++k) {
        const std::string& a = argv[k];
        if (a == "--") break;
        for (const CLI::App* s : sub->get_subcommands({}))
            if (s->get_name() == a) {
                // service install passes the flags it does not know on to serve's parser.
                if (s->get_allow_extras()) return "";
                std::vector<std::string> more = long_flags(*s);
                flags.insert(flags.end(), more.begin(), more.end());
                where += " " + a;
            }
        if (!a.starts_with("--") || a.size() == 2) continue;
        const std::string name = a.substr(0, a.find('='));
        const std::vector<std::string> own = long_flags(app);  // myriad's own, such as --quiet
        if (std::find(flags.begin(), flags.end(), name) != flags.end() ||
            std::find(own.begin(), own.end(), name) != own.end())
            continue;
        std::string msg = fmt::format("{}: unknown flag {}", where, name);
        if (auto n = nearest(name, flags)) msg += fmt::format("; did you mean {}?", *n);
        return msg + fmt::format(" (myriad {} --help lists its flags)", where);
    }
    return "";
}

}  // namespace myriad::cli
