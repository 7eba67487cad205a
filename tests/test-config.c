/* SPDX-License-Identifier: BSD-3-Clause */
/* test-config.c: every setting, from the environment and from mgpu_config_t
 * (or mgpu__testcfg_t for the settings for tests):
 * valid values, boundaries, garbage, negatives, overflow, empty, whitespace. */
#include "testutil.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

/* Parse with exactly one variable set; returns the status. */
static mgpu_status_t parse_env(const char *name, const char *value, mgpu__config_t *out) {
  static const char *const all[] = {"MGPU_NUM_THREADS", "MGPU_NUM_GPUS", "MGPU_DEVICES", "MGPU_DEVICE_TO_CORE_RATIO",
                                    "MGPU_MAX_BATCH_SIZE", "MGPU_STREAMS_PER_GPU", "MGPU_SCHED", "MGPU_STATS",
                                    "MGPU_TRACE", "MGPU_DEBUG", "MGPU_EMULATE_GPUS", "MGPU_EMULATE_SPEED",
                                    "MGPU_EMULATE_MEM", "MGPU_EMULATE_LATENCY", "MGPU_EMULATE_WIDTH",
                                    "MGPU_EMULATE_OVERLAP", "MGPU_FAULT_INJECT", "MGPU_TENSOR_SPLIT",
                                    "MGPU_RESERVE_THREADS", "MGPU_TIMEOUT"};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) unsetenv(all[i]);
  if (value) setenv(name, value, 1);
  mgpu__log_set_level(MGPU_LOG_NONE);
  return mgpu__config_parse(NULL, NULL, out);
}

typedef struct {
  const char *name, *value;
  int ok;
} env_case_t;

/* The bad-input table: every variable with garbage, negatives, overflow, empty
 * values, whitespace and trailing junk, next to valid and boundary values. */
static const env_case_t env_cases[] = {
    {"MGPU_NUM_THREADS", "4", 1},      {"MGPU_NUM_THREADS", "0", 1},
    {"MGPU_NUM_THREADS", "4096", 1},   {"MGPU_NUM_THREADS", " 8 ", 1},
    {"MGPU_NUM_THREADS", "4097", 0},   {"MGPU_NUM_THREADS", "-1", 0},
    {"MGPU_NUM_THREADS", "abc", 0},    {"MGPU_NUM_THREADS", "", 0},
    {"MGPU_NUM_THREADS", "   ", 0},    {"MGPU_NUM_THREADS", "4x", 0},
    {"MGPU_NUM_THREADS", "4 4", 0},    {"MGPU_NUM_THREADS", "99999999999999999999999", 0},
    {"MGPU_NUM_THREADS", "0x10", 0},   {"MGPU_NUM_THREADS", "1.5", 0},
    {"MGPU_RESERVE_THREADS", "0", 1},  {"MGPU_RESERVE_THREADS", "4096", 1},
    {"MGPU_RESERVE_THREADS", "-1", 0}, {"MGPU_RESERVE_THREADS", "4097", 0},
    {"MGPU_RESERVE_THREADS", "x", 0},  {"MGPU_RESERVE_THREADS", "", 0},
    {"MGPU_RESERVE_THREADS", "auto", 1}, {"MGPU_RESERVE_THREADS", "AUTO", 1},
    {"MGPU_RESERVE_THREADS", " auto ", 1}, {"MGPU_RESERVE_THREADS", "Auto", 1},
    {"MGPU_RESERVE_THREADS", "au to", 0},
    {"MGPU_RESERVE_THREADS", "auto1", 0}, {"MGPU_RESERVE_THREADS", "-2", 0},
    {"MGPU_NUM_GPUS", "0", 1},         {"MGPU_NUM_GPUS", "64", 1},
    {"MGPU_NUM_GPUS", "65", 0},        {"MGPU_NUM_GPUS", "-2", 0},
    {"MGPU_NUM_GPUS", "two", 0},       {"MGPU_NUM_GPUS", "", 0},
    {"MGPU_DEVICES", "0", 1},          {"MGPU_DEVICES", "0,2", 1},
    {"MGPU_DEVICES", " 3,1 ", 1},      {"MGPU_DEVICES", "0,0", 0},
    {"MGPU_DEVICES", "", 0},           {"MGPU_DEVICES", ",", 0},
    {"MGPU_DEVICES", "0,", 0},         {"MGPU_DEVICES", "-1", 0},
    {"MGPU_DEVICES", "64", 0},         {"MGPU_DEVICES", "a,b", 0},
    {"MGPU_DEVICES", "1;2", 0},        {"MGPU_DEVICE_TO_CORE_RATIO", "200", 1},
    {"MGPU_DEVICE_TO_CORE_RATIO", "0.5", 1}, {"MGPU_DEVICE_TO_CORE_RATIO", "1e7", 1},
    {"MGPU_DEVICE_TO_CORE_RATIO", "0", 0},   {"MGPU_DEVICE_TO_CORE_RATIO", "-3", 0},
    {"MGPU_DEVICE_TO_CORE_RATIO", "nan", 0}, {"MGPU_DEVICE_TO_CORE_RATIO", "inf", 0},
    {"MGPU_DEVICE_TO_CORE_RATIO", "1e400", 0}, {"MGPU_DEVICE_TO_CORE_RATIO", "1e-308", 1},
    {"MGPU_DEVICE_TO_CORE_RATIO", "4.9e-324", 1}, {"MGPU_DEVICE_TO_CORE_RATIO", "1e-400", 0}, {"MGPU_DEVICE_TO_CORE_RATIO", "2.0.1", 0},
    {"MGPU_DEVICE_TO_CORE_RATIO", "", 0},    {"MGPU_MAX_BATCH_SIZE", "1", 1},
    {"MGPU_MAX_BATCH_SIZE", "1048576", 1},   {"MGPU_MAX_BATCH_SIZE", "0", 0},
    {"MGPU_MAX_BATCH_SIZE", "-5", 0},        {"MGPU_MAX_BATCH_SIZE", "1099511627777", 0},
    {"MGPU_MAX_BATCH_SIZE", "1M", 0},        {"MGPU_STREAMS_PER_GPU", "1", 1},
    {"MGPU_STREAMS_PER_GPU", "32", 1},       {"MGPU_STREAMS_PER_GPU", "0", 0},
    {"MGPU_STREAMS_PER_GPU", "33", 0},       {"MGPU_STREAMS_PER_GPU", "", 0},
    {"MGPU_SCHED", "steal", 1},              {"MGPU_SCHED", "STATIC", 1},
    {"MGPU_SCHED", " cpu", 1},               {"MGPU_SCHED", "gpu", 1},
    {"MGPU_SCHED", "fast", 0},               {"MGPU_SCHED", "", 0},
    {"MGPU_SCHED", "steal,static", 0},       {"MGPU_STATS", "1", 1},
    {"MGPU_STATS", "off", 1},                {"MGPU_STATS", "2", 0},
    {"MGPU_STATS", "", 0},                   {"MGPU_TRACE", "/tmp/t.json", 1},
    {"MGPU_TRACE", "", 0},                   {"MGPU_TRACE", "  ", 0},
    {"MGPU_TRACE", "/tmp/t-%r-%p-%h%%.json", 1}, {"MGPU_TRACE", "/tmp/t-%d.json", 0},
    {"MGPU_TRACE", "/tmp/t%", 0},            {"MGPU_TRACE", "/tmp/100%.json", 0},
    {"MGPU_DEBUG", "warn", 1},               {"MGPU_DEBUG", "4", 1},
    {"MGPU_DEBUG", "5", 0},                  {"MGPU_DEBUG", "loud", 0},
    {"MGPU_DEBUG", "-1", 0},                 {"MGPU_EMULATE_GPUS", "2", 1},
    {"MGPU_EMULATE_GPUS", "65", 0},          {"MGPU_EMULATE_GPUS", "x", 0},
    {"MGPU_EMULATE_SPEED", "1e6", 1},        {"MGPU_EMULATE_SPEED", "0", 1},
    {"MGPU_EMULATE_SPEED", "-1", 0},         {"MGPU_EMULATE_SPEED", "fast", 0},
    {"MGPU_EMULATE_MEM", "64M", 1},          {"MGPU_EMULATE_MEM", "2G", 1},
    {"MGPU_EMULATE_MEM", "1048576", 1},      {"MGPU_EMULATE_MEM", "512K", 0},
    {"MGPU_EMULATE_MEM", "2P", 0},           {"MGPU_EMULATE_MEM", "-1G", 0},
    {"MGPU_EMULATE_MEM", "99999999999999999999G", 0}, {"MGPU_EMULATE_MEM", "", 0},
    {"MGPU_FAULT_INJECT", "launch:0:3", 1},  {"MGPU_FAULT_INJECT", "launch:1:all,alloc:0:0", 1},
    {"MGPU_FAULT_INJECT", "const:0:0", 1},   {"MGPU_FAULT_INJECT", "boom:0:1", 0},
    {"MGPU_FAULT_INJECT", "launch:0", 0},    {"MGPU_FAULT_INJECT", "launch:x:1", 0},
    {"MGPU_FAULT_INJECT", "launch:0:-1", 0}, {"MGPU_FAULT_INJECT", "", 0},
    {"MGPU_FAULT_INJECT", "launch:0:1:2", 0},
    {"MGPU_TENSOR_SPLIT", "0.6,0.4", 1},     {"MGPU_TENSOR_SPLIT", " 3, 1 ,0", 1},
    {"MGPU_TENSOR_SPLIT", "1", 1},           {"MGPU_TENSOR_SPLIT", "0,0", 0},
    {"MGPU_TENSOR_SPLIT", "0.6,-0.4", 0},    {"MGPU_TENSOR_SPLIT", "0.6,,0.4", 0},
    {"MGPU_TENSOR_SPLIT", "", 0},            {"MGPU_TENSOR_SPLIT", "nan,1", 0},
    {"MGPU_TENSOR_SPLIT", "1,inf", 0},       {"MGPU_TENSOR_SPLIT", "0.5,x", 0},
    {"MGPU_TENSOR_SPLIT", "1e13", 0},
    /* Numbers are decimal only: strtod's hexadecimal floats, inf and nan are
     * refused, and so is a negative zero wherever negatives are. */
    {"MGPU_DEVICE_TO_CORE_RATIO", "0x10", 0}, {"MGPU_DEVICE_TO_CORE_RATIO", "0x1p3", 0},
    {"MGPU_DEVICE_TO_CORE_RATIO", "infinity", 0}, {"MGPU_DEVICE_TO_CORE_RATIO", " .5 ", 1},
    {"MGPU_DEVICE_TO_CORE_RATIO", "2.", 1},  {"MGPU_DEVICE_TO_CORE_RATIO", "+1.5E2", 1},
    {"MGPU_DEVICE_TO_CORE_RATIO", ".", 0},   {"MGPU_DEVICE_TO_CORE_RATIO", "1e", 0},
    {"MGPU_EMULATE_SPEED", "0x10", 0},       {"MGPU_EMULATE_SPEED", "0x1p3", 0},
    {"MGPU_EMULATE_SPEED", "inf", 0},        {"MGPU_EMULATE_SPEED", "nan", 0},
    {"MGPU_EMULATE_SPEED", "-0.0e0", 0},     {"MGPU_EMULATE_SPEED", "-0", 0},
    {"MGPU_EMULATE_SPEED", "0.0", 1},        {"MGPU_EMULATE_SPEED", "2.5e3", 1},
    {"MGPU_TIMEOUT", "0", 1},                {"MGPU_TIMEOUT", "2.5", 1},
    {"MGPU_TIMEOUT", " auto ", 1},           {"MGPU_TIMEOUT", "AUTO", 1},
    {"MGPU_TIMEOUT", "1e6", 1},              {"MGPU_TIMEOUT", "1000001", 0},
    {"MGPU_TIMEOUT", "-1", 0},               {"MGPU_TIMEOUT", "-0", 0},
    {"MGPU_TIMEOUT", "off", 0},              {"MGPU_TIMEOUT", "", 0},
    {"MGPU_TIMEOUT", "5s", 0},               {"MGPU_TIMEOUT", "0x10", 0},
    {"MGPU_FAULT_INJECT", "hang:0:2", 1},    {"MGPU_FAULT_INJECT", "hangcoll:1:all", 1},
    {"MGPU_FAULT_INJECT", "hung:0:1", 0},    {"MGPU_FAULT_INJECT", " STALL:0:all ", 1},
    {"MGPU_FAULT_INJECT", "stall:0:-1", 0},
    {"MGPU_TENSOR_SPLIT", "0x10,1", 0},      {"MGPU_TENSOR_SPLIT", "1,0x1p3", 0},
    {"MGPU_TENSOR_SPLIT", "1,-0", 0},        {"MGPU_TENSOR_SPLIT", "1,-0.0e0", 0},
    /* Lists refuse empty entries, as MGPU_DEVICES does. */
    {"MGPU_FAULT_INJECT", "launch:0:1,", 0}, {"MGPU_FAULT_INJECT", ",launch:0:1", 0},
    {"MGPU_FAULT_INJECT", "launch:0:1,,launch:1:2", 0}, {"MGPU_FAULT_INJECT", "launch:0:1, ,alloc:0:1", 0},
    {"MGPU_FAULT_INJECT", "   ", 0},        {"MGPU_FAULT_INJECT", ",", 0},
    {"MGPU_FAULT_INJECT", " launch:0:1 , alloc:1:2 ", 1}, {"MGPU_FAULT_INJECT", "Launch:0:ALL", 1},
    {"MGPU_FAULT_INJECT", "launch::1", 0},  {"MGPU_FAULT_INJECT", "launch:0:", 0},
    {"MGPU_DEVICES", "1,,2", 0},             {"MGPU_DEVICES", ",1", 0},
    {"MGPU_NUM_THREADS", "-0", 0},           {"MGPU_DEVICES", "1,-0", 0},
    {"MGPU_STREAMS_PER_GPU", "+2", 1},       {"MGPU_DEBUG", "-0", 0},
    {"MGPU_EMULATE_LATENCY", "0", 1},        {"MGPU_EMULATE_LATENCY", "10", 1},
    {"MGPU_EMULATE_LATENCY", " 1e-3 ", 1},   {"MGPU_EMULATE_LATENCY", "0.25", 1},
    {"MGPU_EMULATE_LATENCY", "10.5", 0},     {"MGPU_EMULATE_LATENCY", "-1", 0},
    {"MGPU_EMULATE_LATENCY", "-0", 0},       {"MGPU_EMULATE_LATENCY", "abc", 0},
    {"MGPU_EMULATE_LATENCY", "", 0},         {"MGPU_EMULATE_LATENCY", "inf", 0},
    {"MGPU_EMULATE_LATENCY", "nan", 0},      {"MGPU_EMULATE_LATENCY", "0x1p-2", 0},
    {"MGPU_EMULATE_LATENCY", "1s", 0},       {"MGPU_EMULATE_WIDTH", "0", 1},
    {"MGPU_EMULATE_WIDTH", "1", 1},          {"MGPU_EMULATE_WIDTH", "1099511627776", 1},
    {"MGPU_EMULATE_WIDTH", " 256 ", 1},      {"MGPU_EMULATE_WIDTH", "1099511627777", 0},
    {"MGPU_EMULATE_WIDTH", "-1", 0},         {"MGPU_EMULATE_WIDTH", "-0", 0},
    {"MGPU_EMULATE_WIDTH", "1.5", 0},        {"MGPU_EMULATE_WIDTH", "64K", 0},
    {"MGPU_EMULATE_WIDTH", "", 0},           {"MGPU_EMULATE_WIDTH", "x", 0},
    {"MGPU_EMULATE_WIDTH", "0x100", 0},
    {"MGPU_EMULATE_OVERLAP", "0", 1},        {"MGPU_EMULATE_OVERLAP", "1", 1},
    {"MGPU_EMULATE_OVERLAP", " on ", 1},     {"MGPU_EMULATE_OVERLAP", "FALSE", 1},
    {"MGPU_EMULATE_OVERLAP", "2", 0},        {"MGPU_EMULATE_OVERLAP", "", 0},
    {"MGPU_EMULATE_OVERLAP", "-1", 0},       {"MGPU_EMULATE_OVERLAP", "side", 0},
};
#define NCASES ((int)(sizeof env_cases / sizeof env_cases[0]))

START_TEST(test_env_table) {
  const env_case_t *c = &env_cases[_i];
  mgpu__config_t cfg;
  mgpu_status_t st = parse_env(c->name, c->value, &cfg);
  if (c->ok) {
    ck_assert_msg(st == MGPU_OK, "%s='%s' should be accepted: %s", c->name, c->value, mgpu_last_error());
  } else {
    ck_assert_msg(st == MGPU_EINVAL, "%s='%s' should be rejected", c->name, c->value);
    /* The message names the variable, the value and what is accepted. */
    ck_assert_msg(strstr(mgpu_last_error(), c->name) != NULL, "message lacks the name: %s", mgpu_last_error());
    ck_assert_msg(strstr(mgpu_last_error(), "expected") != NULL, "message lacks the accepted range: %s",
                  mgpu_last_error());
  }
}
END_TEST

START_TEST(test_env_values) {
  mgpu__config_t c;
  ck_assert_int_eq(parse_env("MGPU_NUM_THREADS", " 12 ", &c), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 12);
  ck_assert_int_eq(c.source[MGPU_SET_NUM_THREADS], MGPU_SRC_ENV);
  ck_assert_int_eq(parse_env("MGPU_DEVICES", "3,1", &c), MGPU_OK);
  ck_assert_int_eq(c.v.ndevices, 2);
  ck_assert_int_eq(c.v.devices[0], 3);
  ck_assert_int_eq(c.v.devices[1], 1);
  ck_assert_int_eq(parse_env("MGPU_EMULATE_MEM", "64M", &c), MGPU_OK);
  ck_assert_int_eq(c.test.emulate_mem, 64LL << 20);
  ck_assert_int_eq(parse_env("MGPU_EMULATE_LATENCY", " 0.25 ", &c), MGPU_OK);
  ck_assert(c.test.emulate_latency == 0.25);
  ck_assert_int_eq(c.source[MGPU_SET_EMULATE_LATENCY], MGPU_SRC_ENV);
  ck_assert_int_eq(mgpu__config_resolve(&c, 4, 0), MGPU_OK);
  ck_assert_str_eq(c.text[MGPU_SET_EMULATE_LATENCY], "0.25 s");
  ck_assert_int_eq(parse_env("MGPU_EMULATE_WIDTH", "4096", &c), MGPU_OK);
  ck_assert_int_eq(c.test.emulate_width, 4096);
  ck_assert_int_eq(c.source[MGPU_SET_EMULATE_WIDTH], MGPU_SRC_ENV);
  ck_assert_int_eq(mgpu__config_resolve(&c, 4, 0), MGPU_OK);
  ck_assert_str_eq(c.text[MGPU_SET_EMULATE_WIDTH], "4096");
  ck_assert_int_eq(parse_env("MGPU_EMULATE_WIDTH", "1.5", &c), MGPU_EINVAL);
  ck_assert_str_eq(mgpu_last_error(),
                   "MGPU_EMULATE_WIDTH='1.5' is invalid: expected an integer in 0..1099511627776 (0: no limit)");
  ck_assert_int_eq(parse_env("MGPU_EMULATE_LATENCY", "11", &c), MGPU_EINVAL);
  ck_assert_str_eq(mgpu_last_error(), "MGPU_EMULATE_LATENCY='11' is invalid: expected a number of seconds in 0..10");
  ck_assert_int_eq(parse_env("MGPU_SCHED", "Static", &c), MGPU_OK);
  ck_assert_int_eq(c.v.sched, MGPU_SCHED_STATIC);
  ck_assert_int_eq(parse_env("MGPU_DEBUG", "info", &c), MGPU_OK);
  ck_assert_int_eq(c.v.debug, MGPU_LOG_INFO);
  ck_assert_int_eq(parse_env("MGPU_TENSOR_SPLIT", "0.6, 0.4,1", &c), MGPU_OK);
  ck_assert_int_eq(c.v.ntensor_split, 3);
  ck_assert(c.v.tensor_split[0] == 0.6 && c.v.tensor_split[1] == 0.4 && c.v.tensor_split[2] == 1);
  ck_assert_int_eq(parse_env("MGPU_TENSOR_SPLIT", "1,x", &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_TENSOR_SPLIT='1,x' is invalid: entry 'x'"));
  ck_assert_int_eq(parse_env("MGPU_TENSOR_SPLIT", "0,0", &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "every share is 0"));
  /* A blank value is refused as empty, whatever its length. */
  ck_assert_int_eq(parse_env("MGPU_TRACE", "   ", &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "the path is empty"));
  ck_assert_ptr_null(strstr(mgpu_last_error(), "too long"));
  ck_assert_int_eq(parse_env("MGPU_TRACE", " /tmp/t.json ", &c), MGPU_OK);
  ck_assert_str_eq(c.v.trace, "/tmp/t.json");
  /* A % that starts no substitution is named, with the ones there are. */
  ck_assert_int_eq(parse_env("MGPU_TRACE", "run-%d.json", &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_TRACE='run-%d.json' is invalid: '%d' is no substitution"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "%r (the MPI rank), %p (the process id), %h (the host name)"));
  ck_assert_int_eq(parse_env("MGPU_TRACE", "run%", &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "it ends in a lone '%'"));
  ck_assert_int_eq(parse_env("MGPU_RESERVE_THREADS", " Auto ", &c), MGPU_OK);
  ck_assert_int_eq(c.v.reserve_threads, MGPU_RESERVE_AUTO);
  ck_assert_int_eq(parse_env("MGPU_FAULT_INJECT", "launch:0:1,,alloc:0:1", &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "entry 2 is empty"));
  ck_assert_int_eq(parse_env("MGPU_EMULATE_SPEED", "-0.0e0", &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_EMULATE_SPEED='-0.0e0' is invalid"));
  ck_assert_int_eq(parse_env("MGPU_NUM_THREADS", NULL, &c), MGPU_OK);
  ck_assert_int_eq(c.v.ntensor_split, -1);
  ck_assert_int_eq(c.source[MGPU_SET_NUM_THREADS], MGPU_SRC_DEFAULT);
  ck_assert_int_eq(c.v.streams_per_gpu, 3);
  ck_assert_int_eq(c.v.sched, MGPU_SCHED_STEAL);
  /* The settings for tests: no emulated device, no latency, no width. */
  ck_assert_int_eq(c.test.emulate_gpus, 0);
  ck_assert(c.test.emulate_latency == 0);
  ck_assert_int_eq(c.test.emulate_width, 0);
  ck_assert_int_eq(mgpu__config_resolve(&c, 4, 0), MGPU_OK);
  ck_assert_str_eq(c.text[MGPU_SET_EMULATE_LATENCY], "0 s");
  ck_assert_str_eq(c.text[MGPU_SET_EMULATE_WIDTH], "no limit");
  ck_assert_int_eq(c.source[MGPU_SET_EMULATE_WIDTH], MGPU_SRC_DEFAULT);
}
END_TEST

START_TEST(test_arg_wins_over_env) {
  mgpu__config_t c;
  parse_env("MGPU_NUM_THREADS", "7", &c);
  mgpu_config_t a;
  mgpu_config_init(&a);
  a.num_threads = 3;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 3);
  ck_assert_int_eq(c.source[MGPU_SET_NUM_THREADS], MGPU_SRC_ARG);
  /* An unset field falls back to the environment... */
  a.num_threads = -1;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 7);
  /* ...unless the environment is ignored. */
  a.ignore_env = 1;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_OK);
  ck_assert_int_eq(c.source[MGPU_SET_NUM_THREADS], MGPU_SRC_DEFAULT);
  unsetenv("MGPU_NUM_THREADS");
}
END_TEST

START_TEST(test_bad_args) {
  mgpu__config_t c;
  mgpu__log_set_level(MGPU_LOG_NONE);
  mgpu_config_t a;
  struct { int field; long long value; } cases[] = {{0, -5}, {0, 5000}, {1, 65}, {2, 0}, {2, 33}, {3, 0}, {4, -2},
                                                    {5, -3}, {5, 4097}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    mgpu_config_init(&a);
    a.ignore_env = 1;
    switch (cases[i].field) {
    case 0: a.num_threads = (int)cases[i].value; break;
    case 1: a.num_gpus = (int)cases[i].value; break;
    case 2: a.streams_per_gpu = (int)cases[i].value; break;
    case 3: a.sched = (mgpu_sched_t)99; break;
    case 4: a.max_batch_size = cases[i].value; break;
    case 5: a.reserve_threads = (int)cases[i].value; break;
    }
    ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
    ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_init: cfg->"));
  }
  /* ignore_env is a flag: 0 or 1. */
  int flags[] = {7, -1, 2};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
    mgpu_config_init(&a);
    a.ignore_env = flags[i];
    ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "mgpu_init: cfg->ignore_env = %d is invalid: expected 0 (the MGPU_* variables count, "
             "the default) or 1 (they are ignored)", flags[i]);
    ck_assert_str_eq(mgpu_last_error(), want);
  }
  mgpu_config_init(&a);
  a.ignore_env = 0;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_OK);
  ck_assert_int_eq(c.v.ignore_env, 0);
  mgpu_config_init(&a);
  a.ignore_env = 1;
  a.reserve_threads = MGPU_RESERVE_AUTO;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_OK);
  ck_assert_int_eq(c.v.reserve_threads, MGPU_RESERVE_AUTO);
  ck_assert_int_eq(c.source[MGPU_SET_RESERVE_THREADS], MGPU_SRC_ARG);
  /* A blank or overlong trace path is named for what it is. */
  mgpu_config_init(&a);
  a.ignore_env = 1;
  a.trace = "  ";
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_init: cfg->trace = \"\" (a blank path)"));
  static char long_path[1100];
  memset(long_path, 'a', sizeof long_path - 1);
  a.trace = long_path;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "(a path of 1099 characters)"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "1..1023 characters"));
  a.trace = "run-%x.json";
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_init: cfg->trace = \"run-%x.json\" ('%x' is no substitution)"));
  /* MGPU_TIMEOUT's field: seconds, 0 (off) or MGPU_TIMEOUT_AUTO. */
  mgpu_config_init(&a);
  a.ignore_env = 1;
  a.timeout = -5;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_init: cfg->timeout = -5 is invalid (the field of MGPU_TIMEOUT)"));
  a.timeout = 0.25;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_OK);
  ck_assert(c.v.timeout == 0.25);
  a.timeout = -1;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_OK);
  ck_assert(c.v.timeout == MGPU_TIMEOUT_AUTO);
  /* A negative zero is a negative, from a field as from the environment. */
  mgpu_config_init(&a);
  a.ignore_env = 1;
  mgpu__testcfg_t t;
  mgpu__testcfg_init(&t);
  t.emulate_speed = -0.0;
  ck_assert_int_eq(mgpu__config_parse(&a, &t, &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_init: mgpu__testcfg_t.emulate_speed = -0 is invalid (the field of "
                                                  "MGPU_EMULATE_SPEED)"));
  mgpu_config_init(&a);
  a.ignore_env = 1;
  a.ntensor_split = 2;
  a.tensor_split[0] = 1;
  a.tensor_split[1] = -0.0;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
  mgpu_config_init(&a);
  a.ignore_env = 1;
  a.device_to_core_ratio = -1;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
  mgpu_config_init(&a);
  a.ignore_env = 1;
  a.ndevices = 2;
  a.devices[0] = a.devices[1] = 1;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "twice"));
  mgpu_config_init(&a);
  a.ignore_env = 1;
  a.ntensor_split = 2;
  a.tensor_split[0] = 1;
  a.tensor_split[1] = -1;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
  /* One message, naming the field and what is wrong with it. */
  ck_assert_msg(strstr(mgpu_last_error(), "mgpu_init: cfg->tensor_split (the field of MGPU_TENSOR_SPLIT) is invalid: "
                                          "share 1 is -1: expected a number in 0..1e12"),
                "%s", mgpu_last_error());
  ck_assert_msg(!strstr(mgpu_last_error(), "is invalid (the field"), "%s", mgpu_last_error());
  a.ntensor_split = 0;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_EINVAL);
  a.ntensor_split = 2;
  a.tensor_split[1] = 3;
  ck_assert_int_eq(mgpu__config_parse(&a, NULL, &c), MGPU_OK);
  ck_assert_int_eq(c.v.ntensor_split, 2);
  ck_assert_int_eq(c.source[MGPU_SET_TENSOR_SPLIT], MGPU_SRC_ARG);
}
END_TEST

/* A bad field of mgpu_config_t is mgpu_init's error, naming the field as the
 * caller wrote it and what the field takes, in the field's values, not its
 * variable's words (stats takes 0 or 1, not yes or on). */
START_TEST(test_field_errors) {
  mgpu__log_set_level(MGPU_LOG_NONE);
  struct {
    int field, value;
    const char *want;
  } cases[] = {
      {0, 5000, "mgpu_init: cfg->num_threads = 5000 is invalid (the field of MGPU_NUM_THREADS): expected an integer "
                "in 0..4096, or leave it unset"},
      {1, 2, "mgpu_init: cfg->stats = 2 is invalid (the field of MGPU_STATS): expected 0 or 1, or leave it unset"},
      {2, 3, "mgpu_init: cfg->mpi = 3 is invalid (the field of MGPU_MPI): expected 1 (auto) or 0 (off), or leave it "
             "unset"},
      {3, 9, "mgpu_init: cfg->debug = 9 is invalid (the field of MGPU_DEBUG): expected 0 (none), 1 (error), 2 (warn), "
             "3 (info) or 4 (debug), or leave it unset"},
      {4, 99, "mgpu_init: cfg->sched = 99 is invalid (the field of MGPU_SCHED): expected MGPU_SCHED_STEAL, "
              "MGPU_SCHED_STATIC, MGPU_SCHED_CPU or MGPU_SCHED_GPU, or leave it unset"},
      {5, -7, "mgpu_init: cfg->reserve_threads = -7 is invalid (the field of MGPU_RESERVE_THREADS): expected an "
              "integer in 0..4096, fewer than the CPU workers, or MGPU_RESERVE_AUTO, or leave it unset"},
      {6, -5, "mgpu_init: cfg->timeout = -5 is invalid (the field of MGPU_TIMEOUT): expected a number of seconds in "
              "0..1e6 (0: off) or MGPU_TIMEOUT_AUTO, or leave it unset"},
      {7, 70, "mgpu_init: cfg->devices = 70 (entry 0) is invalid (the field of MGPU_DEVICES): expected ndevices in "
              "1..64 and devices[0..ndevices) distinct indices in 0..63, or leave it unset"},
      {8, 0, "mgpu_init: cfg->ntensor_split = 0 is invalid (the field of MGPU_TENSOR_SPLIT): expected ntensor_split "
             "in 1..65, with that many shares >= 0 in tensor_split, not all 0, or leave it unset"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    mgpu_config_t a;
    mgpu_config_init(&a);
    a.ignore_env = 1;
    int v = cases[i].value;
    switch (cases[i].field) {
    case 0: a.num_threads = v; break;
    case 1: a.stats = v; break;
    case 2: a.mpi = v; break;
    case 3: a.debug = v; break;
    case 4: a.sched = (mgpu_sched_t)v; break;
    case 5: a.reserve_threads = v; break;
    case 6: a.timeout = v; break;
    case 7: a.ndevices = 1, a.devices[0] = v; break;
    case 8: a.ntensor_split = v; break;
    }
    mgpu_runtime_t *rt = NULL;
    ck_assert_int_eq(mgpu_init(&a, &rt), MGPU_EINVAL);
    ck_assert_str_eq(mgpu_last_error(), cases[i].want);
    ck_assert_ptr_null(rt);
  }
  /* The variables keep their own words. */
  setenv("MGPU_STATS", "maybe", 1);
  mgpu_runtime_t *rt = NULL;
  ck_assert_int_eq(mgpu_init(NULL, &rt), MGPU_EINVAL);
  ck_assert_str_eq(mgpu_last_error(), "MGPU_STATS='maybe' is invalid: expected 0, 1, yes, no, on, off, true or false");
  unsetenv("MGPU_STATS");
}
END_TEST

START_TEST(test_test_args) {
  /* The settings for tests from mgpu__testcfg_t: range-checked like their
   * variables, named by their field, and winning over the environment. */
  mgpu__config_t c;
  mgpu__log_set_level(MGPU_LOG_NONE);
  mgpu__testcfg_t t;
  struct { int field; double value; const char *name; } bad[] = {
      {0, 65, "emulate_gpus = 65"},          {0, -2, "emulate_gpus = -2"},         {1, -3, "emulate_speed = -3"},
      {1, 2e12, "emulate_speed = 2e+12"},    {2, 1024, "emulate_mem = 1024"},      {3, 10.5, "emulate_latency = 10.5"},
      {3, -0.0, "emulate_latency = -0"},     {3, -2, "emulate_latency = -2"},      {4, -2, "emulate_width = -2"},
      {4, 1099511627777.0, "emulate_width = 1099511627777"}, {5, 0, "fault_inject = boom:0:1"},
      {6, 2, "emulate_overlap = 2"},         {6, -2, "emulate_overlap = -2"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    mgpu__testcfg_init(&t);
    switch (bad[i].field) {
    case 0: t.emulate_gpus = (int)bad[i].value; break;
    case 1: t.emulate_speed = bad[i].value; break;
    case 2: t.emulate_mem = (long long)bad[i].value; break;
    case 3: t.emulate_latency = bad[i].value; break;
    case 4: t.emulate_width = (long long)bad[i].value; break;
    case 5: t.fault_inject = "boom:0:1"; break;
    case 6: t.emulate_overlap = (int)bad[i].value; break;
    }
    ck_assert_int_eq(mgpu__config_parse(NULL, &t, &c), MGPU_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "mgpu_init: mgpu__testcfg_t.%s is invalid (the field of MGPU_", bad[i].name);
    ck_assert_msg(strstr(mgpu_last_error(), want) != NULL, "%s: %s", want, mgpu_last_error());
    /* Every kind the parser takes is in the list of what is accepted. */
    if (bad[i].field == 5)
      ck_assert_msg(strstr(mgpu_last_error(), "props:GPU:0, hang:GPU:K, hangcoll:GPU:K, stall:GPU:K"), "%s",
                    mgpu_last_error());
  }
  setenv("MGPU_EMULATE_LATENCY", "2", 1);
  setenv("MGPU_EMULATE_WIDTH", "8", 1);
  mgpu__testcfg_init(&t);
  t.emulate_latency = 0.5;
  t.emulate_width = 1 << 20;
  ck_assert_int_eq(mgpu__config_parse(NULL, &t, &c), MGPU_OK);
  ck_assert(c.test.emulate_latency == 0.5);
  ck_assert_int_eq(c.test.emulate_width, 1 << 20);
  ck_assert_int_eq(c.source[MGPU_SET_EMULATE_LATENCY], MGPU_SRC_ARG);
  ck_assert_int_eq(c.source[MGPU_SET_EMULATE_WIDTH], MGPU_SRC_ARG);
  /* Unset fields take the environment. */
  mgpu__testcfg_init(&t);
  ck_assert_int_eq(mgpu__config_parse(NULL, &t, &c), MGPU_OK);
  ck_assert(c.test.emulate_latency == 2);
  ck_assert_int_eq(c.test.emulate_width, 8);
  ck_assert_int_eq(c.source[MGPU_SET_EMULATE_WIDTH], MGPU_SRC_ENV);
  unsetenv("MGPU_EMULATE_LATENCY");
  unsetenv("MGPU_EMULATE_WIDTH");
  /* The overlap, from the field over the variable. */
  setenv("MGPU_EMULATE_OVERLAP", "yes", 1);
  mgpu__testcfg_init(&t);
  ck_assert_int_eq(mgpu__config_parse(NULL, &t, &c), MGPU_OK);
  ck_assert_int_eq(c.test.emulate_overlap, 1);
  ck_assert_int_eq(c.source[MGPU_SET_EMULATE_OVERLAP], MGPU_SRC_ENV);
  t.emulate_overlap = 0;
  ck_assert_int_eq(mgpu__config_parse(NULL, &t, &c), MGPU_OK);
  ck_assert_int_eq(c.test.emulate_overlap, 0);
  ck_assert_int_eq(c.source[MGPU_SET_EMULATE_OVERLAP], MGPU_SRC_ARG);
  unsetenv("MGPU_EMULATE_OVERLAP");
  /* A runtime's emulated devices open with them (emul_open reads rt->cfg.test),
   * and mgpu_info_setting shows them. */
  mgpu_test_config_t tc = mgpu_test_config(1, 1);
  tc.test.emulate_latency = 0.125;
  tc.test.emulate_width = 256;
  tc.cfg.debug = MGPU_LOG_NONE;
  mgpu_runtime_t *rt;
  ck_assert_int_eq(mgpu_test_init(&tc, &rt), MGPU_OK);
  ck_assert(rt->cfg.test.emulate_latency == 0.125);
  ck_assert_int_eq(rt->cfg.test.emulate_width, 256);
  int seen = 0;
  mgpu_setting_t s = {0};
  for (int i = 0; mgpu_info_setting(rt, i, &s) == MGPU_OK; i++) {
    if (!strcmp(s.name, "MGPU_EMULATE_LATENCY")) {
      ck_assert_str_eq(s.value, "0.125 s");
      ck_assert_str_eq(s.source, "argument");
      ck_assert_ptr_nonnull(strstr(s.doc, "TESTS ONLY"));
      seen++;
    }
    if (!strcmp(s.name, "MGPU_EMULATE_WIDTH")) {
      ck_assert_str_eq(s.value, "256");
      ck_assert_ptr_nonnull(strstr(s.doc, "TESTS ONLY"));
      seen++;
    }
  }
  ck_assert_int_eq(seen, 2);
  mgpu_finalize(rt);
}
END_TEST

START_TEST(test_resolve) {
  mgpu__config_t c;
  mgpu__log_set_level(MGPU_LOG_NONE);
  /* Default threads: usable cores minus GPUs used, at least 1. */
  parse_env("MGPU_NUM_THREADS", NULL, &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 16, 2), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 14);
  ck_assert_int_eq(c.v.num_gpus, 2);
  parse_env("MGPU_NUM_THREADS", NULL, &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 2, 4), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 1);
  parse_env("MGPU_NUM_THREADS", NULL, &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 0), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 8);
  /* With a GPU, the reserve is learnt per kernel (auto), between none and a
   * quarter, half and all of the workers, but only when the thread count is
   * the default. */
  parse_env("MGPU_NUM_THREADS", NULL, &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 64, 4), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 60);
  ck_assert_int_eq(c.v.reserve_threads, MGPU_RESERVE_AUTO);
  ck_assert_str_eq(c.text[MGPU_SET_RESERVE_THREADS], "auto (0, 15, 30 or 60 per kernel)");
  ck_assert_int_eq(c.source[MGPU_SET_RESERVE_THREADS], MGPU_SRC_DERIVED);
  /* auto asked for with one GPU and a thread count of the user's. */
  parse_env("MGPU_RESERVE_THREADS", "auto", &c);
  c.v.num_threads = 8;
  ck_assert_int_eq(mgpu__config_resolve(&c, 16, 1), MGPU_OK);
  ck_assert_int_eq(c.v.reserve_threads, MGPU_RESERVE_AUTO);
  ck_assert_str_eq(c.text[MGPU_SET_RESERVE_THREADS], "auto (0, 2, 4 or 8 per kernel)");
  ck_assert_int_eq(c.source[MGPU_SET_RESERVE_THREADS], MGPU_SRC_ENV);
  /* With one CPU worker auto has nothing to try. */
  parse_env("MGPU_RESERVE_THREADS", "auto", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 2, 1), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 1);
  ck_assert_int_eq(c.v.reserve_threads, 0);
  parse_env("MGPU_NUM_THREADS", NULL, &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 16, 1), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 15);
  ck_assert_int_eq(c.v.reserve_threads, MGPU_RESERVE_AUTO);
  ck_assert_str_eq(c.text[MGPU_SET_RESERVE_THREADS], "auto (0, 3, 7 or 15 per kernel)");
  /* Without a GPU there is nothing to keep workers out of. */
  parse_env("MGPU_NUM_THREADS", NULL, &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 16, 0), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 16);
  ck_assert_int_eq(c.v.reserve_threads, 0);
  parse_env("MGPU_NUM_THREADS", "60", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 64, 4), MGPU_OK);
  ck_assert_int_eq(c.v.reserve_threads, 0);
  parse_env("MGPU_RESERVE_THREADS", "3", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 16, 1), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 15);
  ck_assert_int_eq(c.v.reserve_threads, 3);
  ck_assert_int_eq(c.source[MGPU_SET_RESERVE_THREADS], MGPU_SRC_ENV);
  /* At least one worker must stay for batches that GPUs also run. */
  parse_env("MGPU_RESERVE_THREADS", "15", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 16, 1), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_RESERVE_THREADS=15"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "expected 0..14 with 15 CPU workers"));
  ck_assert_int_eq(mgpu__default_reserve(8, true), MGPU_RESERVE_AUTO);
  ck_assert_int_eq(mgpu__default_reserve(8, false), 0);
  ck_assert_int_eq(mgpu__default_reserve(1, true), MGPU_RESERVE_AUTO);
  ck_assert_int_eq(mgpu__default_reserve(0, true), 0);
  ck_assert_int_eq(mgpu__auto_reserve(120), 30);
  ck_assert_int_eq(mgpu__auto_reserve(3), 1);
  ck_assert_int_eq(mgpu__auto_reserve(2), 1);
  ck_assert_int_eq(mgpu__auto_reserve(1), 0);
  ck_assert_int_eq(mgpu__auto_reserve(0), 0);
  /* Half: between a quarter and all, or 0 where no count lies between. */
  ck_assert_int_eq(mgpu__auto_reserve_half(60), 30);
  ck_assert_int_eq(mgpu__auto_reserve_half(15), 7);
  ck_assert_int_eq(mgpu__auto_reserve_half(4), 2);
  ck_assert_int_eq(mgpu__auto_reserve_half(3), 2);
  ck_assert_int_eq(mgpu__auto_reserve_half(2), 0);
  ck_assert_int_eq(mgpu__auto_reserve_half(1), 0);
  /* Two workers: auto tries none and one out, and all where they add little. */
  parse_env("MGPU_RESERVE_THREADS", "auto", &c);
  c.v.num_threads = 2;
  ck_assert_int_eq(mgpu__config_resolve(&c, 16, 1), MGPU_OK);
  ck_assert_str_eq(c.text[MGPU_SET_RESERVE_THREADS], "auto (0, 1 or 2 per kernel)");
  parse_env("MGPU_RESERVE_THREADS", NULL, &c);
  c.v.num_threads = -1;
  /* A device that does not exist. */
  parse_env("MGPU_DEVICES", "0,3", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 2), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_DEVICES"));
  parse_env("MGPU_DEVICES", "1", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 2), MGPU_OK);
  ck_assert_int_eq(c.v.num_gpus, 1);
  ck_assert_int_eq(c.v.devices[0], 1);
  /* GPUs demanded on a machine without any. */
  parse_env("MGPU_NUM_GPUS", "1", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 0), MGPU_ENODEV);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_NUM_GPUS"));
  parse_env("MGPU_DEVICES", "0", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 0), MGPU_ENODEV);
  parse_env("MGPU_NUM_GPUS", "3", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 2), MGPU_EINVAL);
  /* No worker at all. */
  parse_env("MGPU_NUM_THREADS", "0", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 0), MGPU_EINVAL);
  parse_env("MGPU_NUM_THREADS", "0", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 1), MGPU_OK);
}
END_TEST

START_TEST(test_init_rejects_env) {
  /* Through the public entry point: mgpu_init fails and creates nothing. */
  mgpu__config_t c;
  parse_env("MGPU_NUM_THREADS", "abc", &c);
  mgpu_runtime_t *rt = (mgpu_runtime_t *)0x1;
  ck_assert_int_eq(mgpu_init(NULL, &rt), MGPU_EINVAL);
  ck_assert_ptr_eq(rt, (mgpu_runtime_t *)0x1);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_NUM_THREADS='abc'"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "0..4096"));
  unsetenv("MGPU_NUM_THREADS");
  /* More GPUs than any machine here has: ENODEV without GPUs, EINVAL with. */
  setenv("MGPU_NUM_GPUS", "64", 1);
  mgpu_status_t st = mgpu_init(NULL, &rt);
  ck_assert(st == MGPU_ENODEV || st == MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_NUM_GPUS=64"));
  unsetenv("MGPU_NUM_GPUS");
}
END_TEST

START_TEST(test_deadline_rule) {
  /* Fixed, off, and auto: ten times the prediction, with a floor, and a
   * longer one with no prediction. */
  ck_assert(mgpu__deadline_s(2.5, 100) == 2.5);
  ck_assert(mgpu__deadline_s(0, 100) == 0);
  ck_assert(mgpu__deadline_s(MGPU_TIMEOUT_AUTO, 0) == MGPU_TIMEOUT_FIRST_S);
  ck_assert(mgpu__deadline_s(MGPU_TIMEOUT_AUTO, -1) == MGPU_TIMEOUT_FIRST_S);
  ck_assert(mgpu__deadline_s(MGPU_TIMEOUT_AUTO, 0.001) == MGPU_TIMEOUT_FLOOR_S);
  ck_assert(mgpu__deadline_s(MGPU_TIMEOUT_AUTO, 7) == 70);
}
END_TEST

START_TEST(test_fault_gpu_range) {
  /* A fault plan naming a GPU the runtime does not use is refused. */
  mgpu__config_t c;
  parse_env("MGPU_FAULT_INJECT", "launch:0:1,launch:5:all", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 2), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_FAULT_INJECT"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "entry 'launch:5:all'"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "2 GPUs"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "0..1"));
  parse_env("MGPU_FAULT_INJECT", "alloc:1:0", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 2), MGPU_OK);
  parse_env("MGPU_FAULT_INJECT", "alloc:0:0", &c);
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 0), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "no GPU"));
  /* Through mgpu__init_test, from the settings for tests, on emulated GPUs. */
  mgpu_test_config_t a = mgpu_test_config(1, 2);
  a.test.fault_inject = "launch:5:1";
  a.cfg.debug = MGPU_LOG_NONE;
  mgpu_runtime_t *rt = (mgpu_runtime_t *)0x1;
  ck_assert_int_eq(mgpu_test_init(&a, &rt), MGPU_EINVAL);
  ck_assert_ptr_eq(rt, (mgpu_runtime_t *)0x1);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "entry 'launch:5:1'"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "2 GPUs"));
}
END_TEST

START_TEST(test_thread_limit) {
  /* The CPU workers are one OpenMP team: OMP_THREAD_LIMIT caps the default
   * count, and a larger explicit count is refused, naming both. */
  mgpu__config_t c;
  parse_env("MGPU_NUM_THREADS", NULL, &c);
  c.thread_limit = 1;
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 0), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 1);
  ck_assert_int_eq(c.source[MGPU_SET_NUM_THREADS], MGPU_SRC_DERIVED);
  parse_env("MGPU_NUM_THREADS", NULL, &c);
  c.thread_limit = 3;
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 2), MGPU_OK);
  ck_assert_int_eq(c.v.num_threads, 3);
  parse_env("MGPU_NUM_THREADS", "4", &c);
  c.thread_limit = 2;
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 0), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_NUM_THREADS=4"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "OMP_THREAD_LIMIT=2"));
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "0..2"));
  parse_env("MGPU_NUM_THREADS", "2", &c);
  c.thread_limit = 2;
  ck_assert_int_eq(mgpu__config_resolve(&c, 8, 0), MGPU_OK);
}
END_TEST

START_TEST(test_trace_write_fails) {
  /* mgpu_finalize_checked reports a trace that could not be written. */
  if (access("/dev/full", W_OK) != 0) return;
  mgpu_config_t a;
  mgpu_config_init(&a);
  a.ignore_env = 1;
  a.num_threads = 1;
  a.num_gpus = 0;
  a.trace = "/dev/full";
  a.debug = MGPU_LOG_NONE;
  mgpu_runtime_t *rt = NULL;
  ck_assert_int_eq(mgpu_init(&a, &rt), MGPU_OK);
  ck_assert_int_eq(mgpu_finalize_checked(rt), MGPU_ESYSTEM);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_TRACE='/dev/full': writing the trace failed"));
  a.trace = NULL;
  ck_assert_int_eq(mgpu_init(&a, &rt), MGPU_OK);
  ck_assert_int_eq(mgpu_finalize_checked(rt), MGPU_OK);
  ck_assert_int_eq(mgpu_finalize_checked(NULL), MGPU_OK);
}
END_TEST

/* What the library writes to stderr between capture_begin and capture_end,
 * into buf. */
typedef struct {
  char path[32];
  int fd, saved;
} capture_t;

static void capture_begin(capture_t *c) {
  snprintf(c->path, sizeof c->path, "/tmp/mgpu-test-XXXXXX");
  c->fd = mkstemp(c->path);
  ck_assert_int_ge(c->fd, 0);
  fflush(stderr);
  c->saved = dup(2);
  dup2(c->fd, 2);
}

static ssize_t capture_end(capture_t *c, char *buf, size_t len) {
  fflush(stderr);
  dup2(c->saved, 2);
  close(c->saved);
  memset(buf, 0, len);
  lseek(c->fd, 0, SEEK_SET);
  ssize_t n = read(c->fd, buf, len - 1);
  close(c->fd);
  unlink(c->path);
  return n;
}

START_TEST(test_unknown_warning) {
  /* The warning names the nearest known variable. */
  capture_t cap;
  capture_begin(&cap);
  mgpu__log_set_level(MGPU_LOG_WARN);
  char *env[] = {"MGPU_NUM_THREAD=4", "MGPU_SCHED=steal", "PATH=/bin", NULL};
  mgpu__config_warn_unknown(env);
  char buf[1024];
  ssize_t n = capture_end(&cap, buf, sizeof buf);
  ck_assert_int_gt(n, 0);
  ck_assert_ptr_nonnull(strstr(buf, "MGPU_NUM_THREAD "));
  ck_assert_ptr_nonnull(strstr(buf, "MGPU_NUM_THREADS"));
  ck_assert_ptr_null(strstr(buf, "MGPU_SCHED"));
}
END_TEST

START_TEST(test_errors_quiet) {
  /* An error returned to the caller is not printed at the default level
   * (warn): mgpu_last_error names the setting, and the program reports it.
   * MGPU_DEBUG=info prints it as well. */
  unsetenv("MGPU_DEBUG");
  setenv("MGPU_NUM_THREADS", "abc", 1);
  mgpu__log_set_level(MGPU_LOG_WARN);
  capture_t cap;
  capture_begin(&cap);
  mgpu_runtime_t *rt = (mgpu_runtime_t *)0x1;
  mgpu_status_t st = mgpu_init(NULL, &rt);
  mgpu_config_t a;
  mgpu_config_init(&a);
  a.ignore_env = 1;
  a.num_threads = 5000;
  mgpu_status_t st2 = mgpu_init(&a, &rt);
  char buf[1024];
  ssize_t n = capture_end(&cap, buf, sizeof buf);
  ck_assert_int_eq(st, MGPU_EINVAL);
  ck_assert_int_eq(st2, MGPU_EINVAL);
  ck_assert_ptr_eq(rt, (mgpu_runtime_t *)0x1);
  ck_assert_msg(n == 0, "printed at the default level: %s", buf);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "mgpu_init: cfg->num_threads = 5000"));
  ck_assert_int_eq(mgpu_init(NULL, &rt), MGPU_EINVAL);
  ck_assert_ptr_nonnull(strstr(mgpu_last_error(), "MGPU_NUM_THREADS='abc' is invalid"));
  mgpu__log_set_level(MGPU_LOG_INFO);
  capture_begin(&cap);
  ck_assert_int_eq(mgpu_init(NULL, &rt), MGPU_EINVAL);
  n = capture_end(&cap, buf, sizeof buf);
  ck_assert_int_gt(n, 0);
  ck_assert_msg(strstr(buf, "libmgpurt: info: returns MGPU_EINVAL: MGPU_NUM_THREADS='abc' is invalid") != NULL,
                "%s", buf);
  unsetenv("MGPU_NUM_THREADS");
  mgpu__log_set_level(MGPU_LOG_NONE);
}
END_TEST

/* A nap past time_t's range (an emulated device of 1e-300 items/s, which
 * MGPU_EMULATE_SPEED accepts) sleeps, where casting it was undefined and
 * returned at once: the device ran as if it had no speed limit. */
static _Atomic int nap_done;
static void *nap_forever(void *arg) {
  MGPU_UNUSED(arg);
  mgpu__nap(INFINITY);
  atomic_store(&nap_done, 1);
  return NULL;
}

START_TEST(test_nap_forever) {
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, nap_forever, NULL), 0);
  mgpu_test_sleep(0.2);
  ck_assert_int_eq(atomic_load(&nap_done), 0);
  pthread_cancel(th); /* nanosleep is a cancellation point */
  pthread_join(th, NULL);
}
END_TEST

START_TEST(test_parsers) {
  long long v;
  ck_assert_int_eq(mgpu__parse_ll("9223372036854775807", 0, LLONG_MAX, &v), 0);
  ck_assert_int_eq(mgpu__parse_ll("9223372036854775808", 0, LLONG_MAX, &v), -1);
  ck_assert_int_eq(mgpu__parse_bytes("1K", 0, 1LL << 40, &v), 0);
  ck_assert_int_eq(v, 1024);
  ck_assert_int_eq(mgpu__parse_bytes("3GiB", 0, 1LL << 40, &v), 0);
  ck_assert_int_eq(v, 3LL << 30);
  ck_assert_int_eq(mgpu__parse_bytes("1KB x", 0, 1LL << 40, &v), -1);
  double d;
  ck_assert_int_eq(mgpu__parse_double("0x10", 0, 1e12, &d), -1);
  ck_assert_int_eq(mgpu__parse_double("-0.0", 0, 1e12, &d), -1);
  ck_assert_int_eq(mgpu__parse_double("-0.0", -1, 1, &d), 0);
  ck_assert_int_eq(mgpu__parse_double("1.25e1", 0, 1e12, &d), 0);
  ck_assert(d == 12.5);
  ck_assert_uint_eq(mgpu__edit_distance("MGPU_SCHEd", "MGPU_SCHED"), 0);
  ck_assert_uint_eq(mgpu__edit_distance("MGPU_STREAMS", "MGPU_STREAMS_PER_GPU"), 8);
  ck_assert_str_eq(mgpu_strerror(MGPU_EINVAL), "invalid argument or setting");
  ck_assert_str_eq(mgpu_status_name(MGPU_EKERNEL), "MGPU_EKERNEL");
  ck_assert_str_eq(mgpu_strerror((mgpu_status_t)12345), "unknown status code");
}
END_TEST

int main(void) {
  Suite *s = suite_create("config");
  TCase *tc = tcase_create("config");
  tcase_set_timeout(tc, 30);
  tcase_add_loop_test(tc, test_env_table, 0, NCASES);
  tcase_add_test(tc, test_env_values);
  tcase_add_test(tc, test_arg_wins_over_env);
  tcase_add_test(tc, test_bad_args);
  tcase_add_test(tc, test_field_errors);
  tcase_add_test(tc, test_test_args);
  tcase_add_test(tc, test_resolve);
  tcase_add_test(tc, test_init_rejects_env);
  tcase_add_test(tc, test_unknown_warning);
  tcase_add_test(tc, test_errors_quiet);
  tcase_add_test(tc, test_trace_write_fails);
  tcase_add_test(tc, test_thread_limit);
  tcase_add_test(tc, test_fault_gpu_range);
  tcase_add_test(tc, test_deadline_rule);
  tcase_add_test(tc, test_parsers);
  tcase_add_test(tc, test_nap_forever);
  suite_add_tcase(s, tc);
  printf("config: %d bad-input and valid environment cases in the table\n", NCASES);
  return mgpu_test_main(s);
}
