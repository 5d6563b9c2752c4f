// myriad pull ORG/NAME[@REVISION]: plans first (from the config and the shards' headers, fetched
// by Range), then downloads into the HF cache: parallel, resumable, every file verified.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/plan_source.h"
#include "hub/downloader.h"
#include "hub/hub_api.h"
#include "plan/memory_plan.h"
#include "plan/plan_report.h"
#include "util/error.h"
#include "util/log.h"
#include "util/progress.h"

namespace myriad::cli {

namespace {

struct PullArgs {
    std::string model;
    std::vector<std::string> include, exclude;
    int jobs = 8;
    std::string gpus;
    bool no_plan = false;
    int64_t context = 0;
    std::string kv_cache_dtype = "auto";
};

int64_t chunk_from_env() {
    const char* v = std::getenv("MYRIAD_HUB_CHUNK");
    if (!v || !*v) return int64_t{64} << 20;
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (end == v || *end != '\0' || n < 1)
        bad_input("environment variable MYRIAD_HUB_CHUNK={}: expected a byte count", v);
    return n;
}

// Plans against --gpus or the GPUs found; stops the pull when nothing fits.
void plan_before_pull(const PullArgs& a, const hub::RepoRef& ref, const hub::RepoInfo& info,
                      const hub::HttpSettings& s) {
    GpuChoice g = choose_gpus(a.gpus);
    if (g.gpus.empty()) {
        log::warn("{}; downloading without checking that the model fits", g.source);
        return;
    }
    PlanModel m = plan_model_from_hub(a.model, ref, info, s);
    plan::PlanOptions o;
    o.gpus = g.gpus;
    o.context = a.context;
    o.kv_cache_dtype = parse_kv_cache_dtype(a.kv_cache_dtype);
    const plan::Plan p = plan::make_plan(m.config, m.weights, o);
    plan::PlanSubject subject{m.name, &m.config, &m.weights, m.predicted ? &*m.predicted : nullptr,
                              g.gpus, g.source};
    std::printf("%s\n", plan::plan_text(subject, p).c_str());
    std::fflush(stdout);
    if (!p.chosen)
        bad_input(
            "{}: no layout fits {}; nothing was downloaded (see the plan above; lower "
            "--context, or pass --no-plan to download anyway)",
            ref.text(), plan::describe_gpus(g.gpus));
}

// Says what the pull waits for when an answer takes more than a second: a hub that does not
// answer shows as that, not as silence until the timeout.
class WaitNotice {
  public:
    explicit WaitNotice(std::string what)
        : thread_([this, what = std::move(what)] {
              std::unique_lock lock(mu_);
              if (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; }))
                  log::info("{}", what);
          }) {}
    ~WaitNotice() {
        {
            std::lock_guard lock(mu_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    WaitNotice(const WaitNotice&) = delete;
    WaitNotice& operator=(const WaitNotice&) = delete;

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;  // last: it starts once the members above exist
};

std::string waiting_for(const std::string& what, const hub::HttpSettings& s) {
    return fmt::format(
        "waiting for {} to answer ({}; up to {:g} s a try, {} tries: MYRIAD_HUB_TIMEOUT, "
        "MYRIAD_HUB_RETRIES; HF_ENDPOINT sets the hub)",
        hub::hub_endpoint(), what, s.timeout_s, s.retries);
}

int run_pull(const PullArgs& a) {
    const auto ref = hub::parse_repo_id(a.model);
    if (!ref) bad_input("{}: expected ORG/NAME or ORG/NAME@REVISION", a.model);
    const hub::HttpSettings s = hub::HttpSettings::from_env();
    hub::PullOptions o;
    o.ref = *ref;
    o.include = a.include;
    o.exclude = a.exclude;
    o.jobs = a.jobs;
    o.chunk_bytes = chunk_from_env();
    if (o.jobs < 1 || o.jobs > 64) bad_input("--jobs {} must be 1 to 64", o.jobs);
    const hub::RepoInfo info = [&] {
        WaitNotice notice(waiting_for("the file list of " + ref->text(), s));
        return hub::fetch_repo_info(*ref, s);
    }();
    std::printf("%s: revision %s, %zu files\n", ref->text().c_str(), info.commit.c_str(),
                info.files.size());
    if (!a.no_plan) {
        bool has_config = false;
        for (const auto& f : info.files) has_config |= f.path == "config.json";
        if (has_config) {
            WaitNotice notice(waiting_for("the config and tensor headers to plan with", s));
            plan_before_pull(a, *ref, info, s);
        } else
            log::warn("{}: no config.json; not a model to plan, downloading", ref->text());
    }
    const hub::PullResult r = hub::pull(info, o, s);
    std::printf("%s: %d files, %s (%d already complete, %s fetched now), verified\n",
                ref->text().c_str(), r.files, human_size(static_cast<double>(r.bytes)).c_str(),
                r.already, human_size(static_cast<double>(r.downloaded)).c_str());
    std::printf("snapshot: %s\n", r.snapshot.c_str());
    return 0;
}

}  // namespace

Run add_pull(CLI::App& app) {
    auto a = std::make_shared<PullArgs>();
    app.add_option("model", a->model, "ORG/NAME or ORG/NAME@REVISION on the hub")->required();
    app.add_option("--include", a->include, "download only paths matching this glob (repeatable)");
    app.add_option("--exclude", a->exclude, "skip paths matching this glob (repeatable)");
    app.add_option("--jobs", a->jobs, "byte ranges in flight at once (default 8)");
    app.add_option("--gpus", a->gpus, "plan for these GPUs first (default: the GPUs found)");
    app.add_option("--context", a->context, "context the plan must fit (default: the model's)");
    app.add_option("--kv-cache-dtype", a->kv_cache_dtype, "KV dtype for the plan (default auto)");
    app.add_flag("--no-plan", a->no_plan, "download without checking that the model fits");
    return [a] { return run_pull(*a); };
}

}  // namespace myriad::cli
