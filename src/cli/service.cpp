// myriad service install [MODEL] [serve flags] [--name N] [--user U] [--dry-run]: a systemd unit
// that runs `myriad serve` with those flags (Type=notify: serve reports readiness), then
// daemon-reload, enable and start. The GPUs come from the planner: the layout it chooses sets
// --tp and CUDA_VISIBLE_DEVICES unless the flags already say.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "cli/plan_source.h"
#include "cli/systemd_unit.h"
#include "format/gguf.h"
#include "hub/hf_cache.h"
#include "plan/memory_plan.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cli {

namespace {

namespace fs = std::filesystem;

struct ServiceArgs {
    std::string name = "myriad";
    std::string user;
    std::string unit_dir = "/etc/systemd/system";
    std::string gpus;
    bool dry_run = false;
    std::vector<std::string> serve_args;  // everything else: MODEL and serve's flags
};

bool valid_unit_name(const std::string& n) {
    if (n.empty() || n.size() > 200) return false;
    return std::all_of(n.begin(), n.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ||
               ch == '.' || ch == '@';
    });
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
    return std::any_of(args.begin(), args.end(), [&](const std::string& a) {
        return a == flag || a.starts_with(flag + "=");
    });
}

// The name the service serves under: ORG/NAME as given, else the model's folder (or .gguf
// file) name, not its absolute path; myriad-tiny for the shipped model.
std::string served_name(const std::string& model) {
    if (model.empty()) return "myriad-tiny";
    std::error_code ec;
    if (!fs::exists(model, ec) && hub::parse_repo_id(model)) return model;
    fs::path p = fs::path(model).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();  // a trailing slash
    return is_gguf_path(p.string()) ? p.stem().string() : p.filename().string();
}

// The binary ExecStart runs: this one, unless it lies in a build tree (which the next build or
// `make clean` replaces under the running service) and an installed myriad is on PATH
// (`make install` puts one in PREFIX/bin).
std::string service_binary() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return "myriad";
    if (!fs::exists(self.parent_path() / "CMakeCache.txt", ec)) return self.string();
    const char* path = std::getenv("PATH");
    std::string_view dirs = path ? path : "";
    while (!dirs.empty()) {
        const size_t colon = dirs.find(':');
        const fs::path candidate = fs::path(dirs.substr(0, colon)) / "myriad";
        dirs = colon == std::string_view::npos ? "" : dirs.substr(colon + 1);
        if (::access(candidate.c_str(), X_OK) != 0) continue;
        if (fs::equivalent(candidate, self, ec)) continue;
        return fs::absolute(candidate).lexically_normal().string();
    }
    log::warn(
        "ExecStart runs {} from its build tree, which the next build replaces; "
        "`make install` (PREFIX=/usr/local) installs myriad on PATH for the service",
        self.string());
    return self.string();
}

// Runs a program (no shell); its exit status.
int run_program(const std::vector<std::string>& argv) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) internal_error("fork failed: {}", std::strerror(errno));
    if (pid == 0) {
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::fprintf(stderr, "myriad: error: cannot run %s: %s\n", args[0], std::strerror(errno));
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int run_install(const ServiceArgs& a) {
    if (!valid_unit_name(a.name))
        bad_input("--name {}: use letters, digits, '-', '_', '.' and '@'", a.name);
    // serve's own parser checks the flags (and finds MODEL among them).
    CLI::App serve_app;
    add_serve(serve_app);
    std::vector<std::string> rev(a.serve_args.rbegin(), a.serve_args.rend());
    try {
        serve_app.parse(rev);
    } catch (const CLI::ParseError& e) {
        bad_input("serve flags for the unit: {} (see myriad serve --help)", e.what());
    }
    const std::string model = serve_app.get_option("model")->as<std::string>();
    std::vector<std::string> flags = a.serve_args;
    if (!model.empty())
        if (auto it = std::find(flags.begin(), flags.end(), model); it != flags.end())
            flags.erase(it);
    const std::string dir = resolve_model(model);
    const std::string model_abs = fs::absolute(dir).lexically_normal().string();

    UnitOptions u;
    u.description = fmt::format("myriad OpenAI-compatible server ({})",
                                model.empty() ? "shipped model" : model);
    u.exec = {service_binary(), "serve", model_abs};
    if (!has_flag(flags, "--served-model-name")) {
        u.exec.push_back("--served-model-name");
        u.exec.push_back(served_name(model));
    }
    u.exec.insert(u.exec.end(), flags.begin(), flags.end());
    u.user = a.user;
    if (u.user.empty())
        if (const char* sudo = std::getenv("SUDO_USER"); sudo && *sudo) u.user = sudo;

    // GPUs: as the flags say, else as the planner chooses for the GPUs given or found.
    u.environment.push_back({"CUDA_DEVICE_ORDER", "PCI_BUS_ID"});
    int tp = serve_app.get_option("--tp")->count() ? serve_app.get_option("--tp")->as<int>() : 0;
    GpuChoice g = choose_gpus(a.gpus);
    if (tp == 0 && !g.gpus.empty()) {
        PlanModel m = load_plan_model(dir);
        plan::PlanOptions o;
        o.gpus = g.gpus;
        const plan::Plan p = plan::make_plan(m.config, m.weights, o);
        if (!p.chosen)
            bad_input("{}: no layout fits {} (run myriad plan {} for the reasons)", model_abs,
                      plan::describe_gpus(g.gpus), model_abs);
        tp = p.layouts[*p.chosen].tp;
        u.comments.push_back(fmt::format("Planned for {} ({}): {}", plan::describe_gpus(g.gpus),
                                         g.source, p.layouts[*p.chosen].label()));
        if (tp > 1) {
            u.exec.push_back("--tp");
            u.exec.push_back(std::to_string(tp));
        }
    }
    if (!g.gpus.empty() && tp > 0) {
        std::string devices;
        for (int i = 0; i < tp; ++i) devices += (i ? "," : "") + std::to_string(i);
        u.environment.push_back({"CUDA_VISIBLE_DEVICES", devices});
    } else if (g.gpus.empty()) {
        u.comments.push_back("No GPUs were known when this was written: " + g.source);
    }
    for (const char* v : {"HF_HOME", "HF_HUB_CACHE"})
        if (const char* val = std::getenv(v); val && *val) u.environment.push_back({v, val});

    const std::string text = systemd_unit(u);
    if (a.dry_run) {
        std::printf("%s", text.c_str());
        return 0;
    }
    const fs::path unit = fs::path(a.unit_dir) / (a.name + ".service");
    std::error_code ec;
    fs::create_directories(a.unit_dir, ec);
    {
        std::ofstream out(unit, std::ios::trunc);
        out << text;
        if (!out)
            bad_input("{}: cannot write the unit (run as root, or --dry-run to print it)",
                      unit.string());
    }
    std::printf("wrote %s\n", unit.string().c_str());
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{"systemctl", "daemon-reload"},
          std::vector<std::string>{"systemctl", "enable", "--now", a.name + ".service"}}) {
        std::printf("running: %s %s%s\n", cmd[0].c_str(), cmd[1].c_str(),
                    cmd.size() > 2 ? (" " + cmd[2] + " " + cmd[3]).c_str() : "");
        if (int rc = run_program(cmd); rc != 0)
            internal_error("{} {} failed (exit status {}); the unit is in {}", cmd[0], cmd[1], rc,
                           unit.string());
    }
    std::printf("%s.service is enabled and starting; follow it with: journalctl -fu %s\n",
                a.name.c_str(), a.name.c_str());
    return 0;
}

}  // namespace

Run add_service(CLI::App& app) {
    auto a = std::make_shared<ServiceArgs>();
    app.require_subcommand(1);
    CLI::App* install = app.add_subcommand(
        "install", "write a systemd unit running myriad serve [MODEL] [serve flags], and start it");
    install->allow_extras();
    install->add_option("--name", a->name, "unit name (default myriad)");
    install->add_option("--user", a->user, "run as this user (default: $SUDO_USER, else root)");
    install->add_option("--unit-dir", a->unit_dir, "where to write (default /etc/systemd/system)");
    install->add_option("--gpus", a->gpus, "plan for these GPUs (default: the GPUs found)");
    install->add_flag("--dry-run", a->dry_run, "print the unit; write and start nothing");
    return [a, install] {
        a->serve_args = install->remaining();
        return run_install(*a);
    };
}

}  // namespace myriad::cli
