#include <gtest/gtest.h>

#include "paratune/planner/plugin_config.h"

using namespace paratune::planner;

TEST(PluginConfig, Defaults) {
  auto c = parse_plugin_config({});
  EXPECT_TRUE(c.topology.empty());
  EXPECT_EQ(c.policy, "/etc/paratune/policy.toml");
  EXPECT_EQ(c.default_mode, Mode::Apply);
  EXPECT_FALSE(c.enabled_by_default);
  EXPECT_FALSE(c.admin_comment);  // opt-in: AdminComment belongs to the site's admins
}

TEST(PluginConfig, AllKeys) {
  auto c = parse_plugin_config({"topology=/etc/paratune/node.xml", "policy=/etc/site.toml", "log_dir=/var/log/pt",
                                "default_mode=suggest", "on_by_default=yes", "job_dir=/scratch",
                                "default_model=llama3-70b", "cache=/run/pt.json", "admin_comment=yes"});
  EXPECT_EQ(c.topology, "/etc/paratune/node.xml");
  EXPECT_EQ(c.policy, "/etc/site.toml");
  EXPECT_TRUE(c.policy_explicit);
  EXPECT_EQ(c.log_dir, "/var/log/pt");
  EXPECT_EQ(c.default_mode, Mode::Suggest);
  EXPECT_TRUE(c.enabled_by_default);
  EXPECT_EQ(c.job_dir, "/scratch");
  EXPECT_EQ(c.cache, "/run/pt.json");
  EXPECT_TRUE(c.admin_comment);
  EXPECT_FALSE(parse_plugin_config({"admin_comment=no"}).admin_comment);
}

TEST(PluginConfig, HardwareProfilePerNode) {
  EXPECT_EQ(parse_plugin_config({}).profile, "");  // none unless the site names one
  EXPECT_EQ(parse_plugin_config({"profile=/etc/paratune/profiles/%h.toml"}, "gpu001").profile,
            "/etc/paratune/profiles/gpu001.toml");
  EXPECT_THROW(parse_plugin_config({"profile=profiles/h100.toml"}), ConfigError);  // relative: refused
}

TEST(PluginConfig, ProbeTimeout) {
  EXPECT_EQ(parse_plugin_config({}).probe_timeout_ms, 10000);
  EXPECT_EQ(parse_plugin_config({"probe_timeout_ms=2500"}).probe_timeout_ms, 2500);
  EXPECT_EQ(parse_plugin_config({}).decide_timeout_ms, 10000);
  EXPECT_EQ(parse_plugin_config({"decide_timeout_ms=3000"}).decide_timeout_ms, 3000);
}

TEST(PluginConfig, BuiltinTopology) {
  EXPECT_EQ(parse_plugin_config({"topology=builtin:nvidia-dgx2"}).topology, "builtin:nvidia-dgx2");
}

TEST(PluginConfig, Errors) {
  auto expect_error = [](std::vector<std::string> args, const char* fragment) {
    try {
      parse_plugin_config(args);
      FAIL() << args[0];
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error({"colour=blue"}, "unknown key 'colour'");
  expect_error({"colour=blue"}, "valid keys");
  expect_error({"topology"}, "expected key=value");
  expect_error({"log_dir=relative/dir"}, "absolute path");
  expect_error({"default_mode=off"}, "apply or suggest");
  expect_error({"on_by_default=perhaps"}, "yes|no");
  expect_error({"admin_comment=always"}, "'admin_comment=always': expected yes|no");
  expect_error({"probe_timeout_ms=5"}, "100 ... 600000");
  expect_error({"decide_timeout_ms=700000"}, "decide_timeout_ms must be 100 ... 600000");
  expect_error({"probe_timeout_ms=10s"}, "100 ... 600000");
}
