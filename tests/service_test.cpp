// myriad service install: the systemd unit's content for representative inputs, quoting of
// ExecStart words, flags checked by serve's parser, and the install steps (with a stand-in
// systemctl on PATH).
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/systemd_unit.h"
#include "run_myriad.h"
#include "temp_dir.h"

namespace myriad::cli {
namespace {

using testing::run_myriad;
using testing::TempDir;

bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(SystemdUnit, Content) {
    UnitOptions o;
    o.description = "myriad OpenAI-compatible server (acme/model)";
    o.exec = {"/usr/local/bin/myriad", "serve", "/srv/models/m", "--port", "8001"};
    o.user = "llm";
    o.environment = {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}};
    o.comments = {"Planned for 8 x H200: TP=4"};
    const std::string u = systemd_unit(o);
    for (const char* line :
         {"[Unit]", "Description=myriad OpenAI-compatible server (acme/model)",
          "After=network-online.target", "Wants=network-online.target", "[Service]", "Type=notify",
          "NotifyAccess=main", "ExecStart=/usr/local/bin/myriad serve /srv/models/m --port 8001",
          "User=llm", "Environment=CUDA_DEVICE_ORDER=PCI_BUS_ID",
          "Environment=CUDA_VISIBLE_DEVICES=0,1,2,3", "Restart=on-failure", "LimitMEMLOCK=infinity",
          "LimitNOFILE=1048576", "TimeoutStopSec=60", "[Install]", "WantedBy=multi-user.target",
          "# Planned for 8 x H200: TP=4"})
        EXPECT_TRUE(has_line(u, line)) << line << "\n" << u;
    // Sections in order; no User= without a user.
    EXPECT_LT(u.find("[Unit]"), u.find("[Service]"));
    EXPECT_LT(u.find("[Service]"), u.find("[Install]"));
    o.user.clear();
    EXPECT_EQ(systemd_unit(o).find("User="), std::string::npos);
}

TEST(SystemdUnit, Quoting) {
    EXPECT_EQ(systemd_quote("/plain/path"), "/plain/path");
    EXPECT_EQ(systemd_quote("with space"), "\"with space\"");
    EXPECT_EQ(systemd_quote("50%"), "50%%");
    EXPECT_EQ(systemd_quote("$HOME"), "$$HOME");
    EXPECT_EQ(systemd_quote("say \"hi\""), "\"say \\\"hi\\\"\"");
    EXPECT_EQ(systemd_quote(""), "\"\"");
    EXPECT_EQ(systemd_quote("A=$x", false), "A=$x");  // Environment= does not expand $
}

std::string golden(const char* name) {
    return std::string(MYRIAD_GOLDENS_ROOT) + "/goldens/" + name;
}

TEST(ServiceInstall, DryRunPrintsTheUnit) {
    auto r = run_myriad("service install " + golden("kimi_k2") +
                        " --port 8001 --max-num-seqs 4 --name my-llm --user svc --gpus 2x80GB "
                        "--dry-run");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has_line(r.out, "Type=notify")) << r.out;
    EXPECT_TRUE(has_line(r.out, "User=svc")) << r.out;
    const std::string exec = "ExecStart=" + std::string(MYRIAD_BINARY) + " serve " +
                             std::filesystem::absolute(golden("kimi_k2")).string() +
                             " --served-model-name kimi_k2" + " --port 8001 --max-num-seqs 4";
    EXPECT_NE(r.out.find(exec + "\n"), std::string::npos) << exec << "\n" << r.out;
    // The planner chose one GPU for this small model.
    EXPECT_TRUE(has_line(r.out, "Environment=CUDA_VISIBLE_DEVICES=0")) << r.out;
    EXPECT_NE(r.out.find("# Planned for 2 x 80GB"), std::string::npos) << r.out;
    // The user's --tp wins over the plan.
    r = run_myriad("service install " + golden("kimi_k2") + " --tp 2 --gpus 2x80GB --dry-run");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has_line(r.out, "Environment=CUDA_VISIBLE_DEVICES=0,1")) << r.out;
}

// An installed myriad on PATH (make install) runs the service, not the build tree's binary;
// the shipped model serves as myriad-tiny.
TEST(ServiceInstall, ExecStartRunsTheInstalledBinary) {
    TempDir tmp;
    std::filesystem::create_directories(tmp.file("bin"));
    tmp.write("bin/myriad", "#!/bin/sh\n");
    std::filesystem::permissions(tmp.file("bin/myriad"), std::filesystem::perms::owner_all);
    const std::string out = tmp.file("unit");
    const std::string cmd = "env PATH=" + tmp.file("bin") + ":/usr/bin:/bin " +
                            std::string(MYRIAD_BINARY) + " service install --gpus 1x80GB " +
                            "--dry-run >" + out + " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    const std::string unit = testing::slurp(out);
    EXPECT_NE(unit.find("ExecStart=" + tmp.file("bin/myriad") + " serve "), std::string::npos)
        << unit;
    EXPECT_NE(unit.find(" --served-model-name myriad-tiny"), std::string::npos) << unit;
}

TEST(ServiceInstall, BadInput) {
    auto r = run_myriad("service install " + golden("kimi_k2") + " --bogus 3 --dry-run");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("serve flags"), std::string::npos) << r.err;
    r = run_myriad("service install /nonexistent/model --dry-run");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("/nonexistent/model"), std::string::npos) << r.err;
    r = run_myriad("service install --name 'a b' --dry-run");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--name"), std::string::npos) << r.err;
}

TEST(ServiceInstall, WritesTheUnitAndRunsSystemctl) {
    TempDir tmp;
    const std::string log = tmp.file("systemctl.log");
    std::filesystem::create_directories(tmp.file("bin"));
    tmp.write("bin/systemctl", "#!/bin/sh\necho \"$@\" >> " + log + "\n");
    std::filesystem::permissions(tmp.file("bin/systemctl"), std::filesystem::perms::owner_all);
    // A stand-in systemctl first on PATH records what install runs.
    const std::string cmd = "env PATH=" + tmp.file("bin") + ":/usr/bin:/bin " +
                            std::string(MYRIAD_BINARY) + " service install " + golden("kimi_k2") +
                            " --name m1 --unit-dir " + tmp.file("units") +
                            " --gpus 1x80GB >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    const std::string unit = testing::slurp(tmp.file("units/m1.service"));
    EXPECT_TRUE(has_line(unit, "Type=notify")) << unit;
    EXPECT_EQ(testing::slurp(log), "daemon-reload\nenable --now m1.service\n");
}

}  // namespace
}  // namespace myriad::cli
