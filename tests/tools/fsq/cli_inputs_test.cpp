// Inputs every command reads, refused in one line naming the option or the file and key (issue
// 58 items 4 and 5): one width parser (common/widths.h) for command-line widths and the widths
// of plan and profile files, so 2^32 + 4 is never taken as 4; unknown keys and impossible
// values in plan, cluster, GPU-table and profile files.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "cli_support.h"
#include "common/sha256.h"
#include "runtime/cuda/cuda_backend.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr const char* kWrapped = "4294967300";  // 2^32 + 4: get<int>() made it 4

void expect_error(const RunResult& r, const std::string& names, const std::string& what, int code = 1) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(names), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
}

class CliInputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(stories260k_dir() / "model.safetensors")) return;
    dir_ = make_temp_dir_caller_removes("fsq-cli-inputs");
  }
  // A 4-bit rtn checkpoint (for export --plan) and a profile (fsq profile), made when a test needs them.
  static void need_w4() {
    if (fs::exists(dir_ / "w4")) return;
    RunResult q = run_fsq({"quantize", "--model", stories260k_dir().string(), "--method", "rtn", "--bits", "4",
                           "--threads", "1", "--progress", "off", "--out", (dir_ / "w4").string()});
    ASSERT_EQ(q.exit_code, 0) << q.err;
  }
  static void need_profile() {
    if (fs::exists(dir_ / "cpu.json")) return;
    RunResult p = run_fsq({"profile", "--model", stories260k_dir().string(), "--prefill-batches", "1,2",
                           "--prefill-lengths", "8,16,32", "--decode-batches", "1,2", "--decode-contexts", "8,32",
                           "--decode-steps", "2", "--min-seconds", "0", "--threads", "1", "--widths", "4",
                           "--work-dir", dir_.string(), "--out", (dir_ / "cpu.json").string()});
    ASSERT_EQ(p.exit_code, 0) << p.err;
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override { FSQ_REQUIRE_STORIES260K(); }

  static fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    testing::write_file(p, text);
    return p;
  }
  static RunResult plan(std::vector<std::string> extra) {
    std::vector<std::string> a = {"plan", "--model", stories260k_dir().string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_fsq(a);
  }
  static RunResult quantize_plan(const fs::path& plan_file, const std::string& out) {
    return run_fsq({"quantize", "--model", stories260k_dir().string(), "--method", "rtn", "--plan", plan_file.string(),
                    "--threads", "1", "--progress", "off", "--out", (dir_ / out).string()});
  }
  static RunResult export_plan(const fs::path& plan_file, const std::string& out) {
    need_w4();
    return run_fsq({"export", "--format", "compressed-tensors", "--plan", plan_file.string(), (dir_ / "w4").string(),
                    (dir_ / out).string()});
  }
  // The profile fsq profile wrote, changed by `edit`.
  template <class F>
  static fs::path profile_with(const std::string& name, F edit) {
    need_profile();
    nlohmann::json j = read_json(dir_ / "cpu.json");
    edit(j);
    return write(name, j.dump());
  }

  static inline fs::path dir_;
};

// Item 4: plan widths above 2^31 wrapped silently: quantize --plan quantized 2^32 + 4 as 4 bits
// and export --plan accepted it for a 4-bit checkpoint.
TEST_F(CliInputs, PlanWidthsPastIntAreRefusedNotWrapped) {
  const std::string five = std::string("[") + kWrapped + ", 4, 4, 4, 4]";
  const fs::path per_layer = write("wrap.json", R"({"plan": {"bits_per_layer": )" + five + "}}");
  expect_error(quantize_plan(per_layer, "q-wrap"), per_layer.string(), "plan.bits_per_layer[0]");
  EXPECT_FALSE(fs::exists(dir_ / "q-wrap"));
  expect_error(export_plan(per_layer, "ct-wrap"), per_layer.string(), "plan.bits_per_layer[0]");
  EXPECT_FALSE(fs::exists(dir_ / "ct-wrap"));

  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < kStoriesLayers; ++i)
    layers.push_back({{"q_proj", 4}, {"k_proj", 4}, {"v_proj", 4}, {"o_proj", 4}, {"gate_proj", 4}, {"up_proj", 4},
                      {"down_proj", nlohmann::json::parse(kWrapped)}});
  const fs::path per_linear = write("wrap-linear.json", nlohmann::json{{"plan", {{"bits_per_linear", layers}}}}.dump());
  expect_error(quantize_plan(per_linear, "q-wrap-linear"), per_linear.string(), "plan.bits_per_linear[0].down_proj");
  EXPECT_FALSE(fs::exists(dir_ / "q-wrap-linear"));

  // Negative, fractional and string widths: the same parser.
  for (const char* bad : {"-4", "4.0", "\"4\"", "0", "17"}) {
    SCOPED_TRACE(bad);
    const fs::path p = write("bad-width.json", std::string(R"({"plan": {"bits_per_layer": [4, 4, )") + bad + ", 4, 4]}}");
    expect_error(quantize_plan(p, "q-bad"), p.string(), "plan.bits_per_layer[2]");
  }
  // A plan of 4-bit layers still applies (the parser takes what fsq plan writes).
  const fs::path ok = write("ok.json", R"({"plan": {"bits_per_layer": [4, 4, 4, 4, 4]}})");
  const RunResult r = export_plan(ok, "ct-ok");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Item 4: every command's width options go through the same parser.
TEST_F(CliInputs, WidthOptionsShareOneParser) {
  const std::string calib = write("calib.safetensors", "not read: the widths are refused first").string();
  for (const std::string& bits : {std::string(kWrapped), std::string("3,") + kWrapped, std::string("3,x")}) {
    SCOPED_TRACE(bits);
    expect_error(plan({"--gpu", "A100-40G", "--bits", bits}), "--bits", "not a whole number of bits from 1 to 16");
    expect_error(plan({"--calib", calib, "--target-bits", "3.5", "--bits", bits}), "--bits",
                 "not a whole number of bits from 1 to 16");
  }
  expect_error(plan({"--gpu", "A100-40G", "--kv-bits", kWrapped}), "--kv-bits", "not a whole number of bits from 1 to 16", 2);
  expect_error(plan({"--gpu", "A100-40G", "--quality-of", "-1"}), "--quality-of", "not a whole number of bits", 2);
  for (const char* option : {"--bits", "--head-bits"})
    expect_error(run_fsq({"quantize", "--model", stories260k_dir().string(), option, kWrapped, "--out",
                          (dir_ / "q-opt").string()}),
                 option, "not a whole number of bits from 1 to 16", 2);
  EXPECT_FALSE(fs::exists(dir_ / "q-opt"));
}

// Item 5: cluster and GPU-table files: unknown (misspelt) keys and impossible values.
TEST_F(CliInputs, ClusterAndGpuTableKeysAreChecked) {
  struct Case {
    std::string json, names, what;
  };
  const std::vector<Case> clusters = {
      {R"({"devices": [{"type": "A100-40G", "cout": 2}]})", "devices[0]", "unknown key 'cout'"},
      {R"({"devices": [{"type": "A100-40G", "Count": 2}]})", "devices[0]", "unknown key 'Count'"},
      {R"({"devices": [{"type": "A100-40G"}], "link": {}})", "", "unknown key 'link'"},
      {R"({"devices": [{"type": "A100-40G", "node": "a"}], "links": {"inter_nodes_gbs": 10}})", "links",
       "unknown key 'inter_nodes_gbs'"},
      {R"({"devices": [{"type": "A100-40G", "node": "a"}], "links": {"pairs": [{"nodes": ["a", "b"], "gbps": 5}]}})",
       "links.pairs[0]", "unknown key 'gbps'"},
      {R"({"devices": [{"type": "A100-40G", "node": "a"}], "links": {"inter_node_gbs": 0}})", "links", "positive"},
  };
  int n = 0;
  for (const Case& c : clusters) {
    SCOPED_TRACE(c.json);
    const fs::path f = write("cluster" + std::to_string(n++) + ".json", c.json);
    expect_error(plan({"--cluster", f.string()}), f.string() + ": " + c.names, c.what);
  }
  const fs::path gpus = write("gpus.json", R"({"gpus": [{"name": "X1", "memory_gib": 8, "fp16_tflops": 10,
      "int8_tops": 0, "bandwidth_gbs": 10, "bandwith_gbs": 20}]})");
  expect_error(plan({"--gpu", "X1", "--gpu-specs", gpus.string()}), gpus.string(), "unknown key 'bandwith_gbs'");
  const fs::path zero = write("gpus0.json", R"({"gpus": [{"name": "X1", "memory_gib": 8, "fp16_tflops": 10,
      "int8_tops": 0, "bandwidth_gbs": 0}]})");
  expect_error(plan({"--gpu", "X1", "--gpu-specs", zero.string()}), zero.string(), "bandwidth_gbs");
  // A correct file plans.
  const fs::path ok = write("cluster-ok.json", R"({"devices": [{"type": "A100-40G", "count": 2, "node": "a"}],
      "links": {"intra_node_gbs": 100, "inter_node_gbs": 10}})");
  EXPECT_EQ(plan({"--cluster", ok.string()}).exit_code, 0);
}

// Item 5: budgets given on the command line must be numbers that can be met: NaN or a negative
// --max-omega / --target-bits were taken as "no budget".
TEST_F(CliInputs, NegativeOrNanBudgetsAreRefused) {
  for (const char* v : {"-5", "nan", "inf"}) {
    SCOPED_TRACE(v);
    expect_error(plan({"--gpu", "A100-40G", "--max-omega", v}), "--max-omega", "finite number", 2);
    expect_error(plan({"--gpu", "A100-40G", "--target-bits", v}), "--target-bits", "finite number", 2);
  }
  expect_error(plan({"--gpu", "A100-40G", "--target-bits", "0"}), "--target-bits", "> 0", 2);
}

// Item 5: plan files: an unknown key, and a budget that is not a number.
TEST_F(CliInputs, PlanFileKeysAreChecked) {
  const fs::path typo = write("typo.json", R"({"plan": {"bits_per_layer": [4, 4, 4, 4, 4], "stage": []}})");
  expect_error(quantize_plan(typo, "q-typo"), typo.string() + ": plan", "unknown key 'stage'");
  const fs::path top = write("top.json", R"({"plan": {"bits_per_layer": [4, 4, 4, 4, 4]}, "model_sha": "x"})");
  expect_error(export_plan(top, "ct-top"), top.string(), "unknown key 'model_sha'");
  const fs::path nan = write("nan.json", R"({"plan": {"bits_per_layer": [4, 4, 4, 4, 4]}, "target_bits": null})");
  expect_error(quantize_plan(nan, "q-nan"), nan.string(), "'target_bits'");
  const fs::path neg = write("neg.json", R"({"plan": {"bits_per_layer": [4, 4, 4, 4, 4]}, "target_bits": -3})");
  expect_error(quantize_plan(neg, "q-neg"), neg.string(), "'target_bits'");
  for (const char* out : {"q-typo", "ct-top", "q-nan", "q-neg"}) EXPECT_FALSE(fs::exists(dir_ / out)) << out;
  // What fsq plan writes is read back: every key it writes is known.
  const fs::path made = dir_ / "made.json";
  ASSERT_EQ(plan({"--gpu", "A100-40G", "--bits", "4,16", "--out", made.string()}).exit_code, 0);
  const RunResult q = quantize_plan(made, "q-made");
  EXPECT_EQ(q.exit_code, 0) << q.err;
}

// Item 5: profile files: unknown keys, widths past int, impossible times and memory.
TEST_F(CliInputs, ProfileFileKeysAndValuesAreChecked) {
  auto run_with = [](const fs::path& p) {
    return plan({"--gpu", "cpu", "--profile", p.string(), "--bits", "4", "--batch", "2", "--prompt-len", "16",
                 "--new-tokens", "4"});
  };
  need_profile();
  ASSERT_EQ(run_with(dir_ / "cpu.json").exit_code, 0);
  const fs::path extra = profile_with("p-extra.json", [](nlohmann::json& j) { j["devcie"] = j["device"]; });
  expect_error(run_with(extra), extra.string(), "unknown key 'devcie'");
  const fs::path sample = profile_with("p-sample.json", [](nlohmann::json& j) { j["samples"][0]["second"] = 1; });
  expect_error(run_with(sample), sample.string() + ": samples[0]", "unknown key 'second'");
  const fs::path wrap = profile_with("p-wrap.json", [](nlohmann::json& j) { j["widths"][0] = 4294967300ULL; });
  expect_error(run_with(wrap), wrap.string(), "'widths'");
  const fs::path bits = profile_with("p-bits.json", [](nlohmann::json& j) {
    for (auto& s : j["samples"])
      if (s["bits"] == 4) s["bits"] = 4294967300ULL;
  });
  expect_error(run_with(bits), bits.string(), "'bits'");
  const fs::path neg = profile_with("p-neg.json", [](nlohmann::json& j) { j["samples"][0]["seconds"] = -1; });
  expect_error(run_with(neg), neg.string() + ": samples[0]", "'seconds'");
  const fs::path mem = profile_with("p-mem.json", [](nlohmann::json& j) { j["device"]["memory_gib"] = 0; });
  expect_error(run_with(mem), mem.string(), "memory_gib");
}

// Item 7: raw C++/LibTorch text became one line naming the option or file and what to do.
TEST_F(CliInputs, RawLibraryMessagesBecomeOneLineNamingTheOption) {
  // A num_hidden_layers of 10^12: fsq plan ended in "std::bad_alloc".
  const fs::path big = dir_ / "big-layers";
  fs::create_directories(big);
  copy_model_side_files(big);
  nlohmann::json config = read_json(big / "config.json");
  config["num_hidden_layers"] = 1'000'000'000'000LL;
  testing::write_file(big / "config.json", config.dump());
  EXPECT_EQ(plan({"--gpu", "A100-40G"}).exit_code, 0);  // the real model plans: the fixture works
  const RunResult huge = run_fsq({"plan", "--model", big.string(), "--gpu", "A100-40G"});
  expect_error(huge, "config.json", "'num_hidden_layers'");
  EXPECT_EQ(huge.err.find("bad_alloc"), std::string::npos) << huge.err;

  // --dtype f16 on the CPU: LibTorch's '"addmm_impl_cpu_" not implemented for 'Half''.
  const fs::path text = write("eval.txt", testing::tail_of(tinystories_val(), 20'000));
  const RunResult eval = run_fsq({"eval", "--model", stories260k_dir().string(), "--data", text.string(), "--dtype", "f16",
                                  "--max-windows", "2", "--threads", "1", "--progress", "off"});
  expect_error(eval, "--dtype f16", "use --dtype bf16 or f32");
  const RunResult gen = run_fsq({"generate", "--model", stories260k_dir().string(), "--prompt", "Once", "--dtype", "f16",
                                 "--max-new-tokens", "2", "--threads", "1"});
  expect_error(gen, "--dtype f16", "use --dtype bf16 or f32");

  // export --device cuda: export runs on the CPU (the option was ignored).
  need_w4();
  expect_error(run_fsq({"export", "--format", "autoawq", "--device", "cuda", (dir_ / "w4").string(),
                        (dir_ / "awq-cuda").string()}),
               "--device cuda", "runs on the CPU");
  EXPECT_FALSE(fs::exists(dir_ / "awq-cuda"));

  // --device cuda where no GPU is visible: said so, not that fsq's decoder cannot run the model.
  if (cuda::device_count() > 0) GTEST_SKIP() << "a GPU is visible: the no-GPU message is not reachable here";
  for (const char* cmd : {"eval", "generate"}) {
    SCOPED_TRACE(cmd);
    std::vector<std::string> a = {cmd, "--model", stories260k_dir().string(), "--device", "cuda", "--threads", "1"};
    if (std::string(cmd) == "eval") a.insert(a.end(), {"--data", text.string(), "--progress", "off"});
    else a.insert(a.end(), {"--prompt", "Once", "--max-new-tokens", "2"});
    const RunResult r = run_fsq(a);
    expect_error(r, "--device cuda", "no GPU is visible");
    EXPECT_EQ(r.err.find("cannot run this model"), std::string::npos) << r.err;
  }
}

// Item 8: fsq inspect on a packed folder checks every tensor's sha256, as eval does (it opened
// the folder without the check and printed the corrupted checkpoint's summary, exit 0).
TEST_F(CliInputs, InspectChecksAPackedFoldersSha256) {
  need_w4();
  const fs::path copy = dir_ / "w4-flipped";
  fs::copy(dir_ / "w4", copy, fs::copy_options::recursive);
  ASSERT_EQ(run_fsq({"inspect", copy.string()}).exit_code, 0);
  std::fstream f(copy / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  uint64_t header = 0;
  f.read(reinterpret_cast<char*>(&header), 8);
  std::string text(header, '\0');
  f.read(text.data(), static_cast<std::streamsize>(header));
  const nlohmann::json h = nlohmann::json::parse(text);
  const std::string tensor = "model.layers.0.self_attn.q_proj.qweight";
  ASSERT_TRUE(h.contains(tensor));
  const auto at = static_cast<std::streamoff>(8 + header + h[tensor]["data_offsets"][0].get<uint64_t>());
  f.seekg(at);
  char byte = 0;
  f.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x55);
  f.seekp(at);
  f.write(&byte, 1);
  f.close();
  const RunResult r = run_fsq({"inspect", copy.string()});
  expect_error(r, tensor, "sha256");
  EXPECT_TRUE(r.out.empty()) << r.out;
}


// A copy of the packed stories260K whose model.safetensors header and bytes `edit` changes
// (the header is written back at its old length, padded with spaces).
template <class Edit>
fs::path packed_copy_with(const fs::path& from, const fs::path& to, Edit edit) {
  fs::copy(from, to, fs::copy_options::recursive);
  std::string bytes = testing::read_file(to / "model.safetensors");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_len));
  const size_t data_at = 8 + header_len;
  edit(header, bytes, data_at);
  std::string text = header.dump();
  EXPECT_LE(text.size(), header_len) << "the edited header does not fit";
  text.resize(header_len, ' ');
  bytes.replace(8, header_len, text);
  testing::write_file(to / "model.safetensors", bytes);
  return to;
}

// Item 8: a tensor the model reads as floats, stored with an integer dtype, was converted
// into nonsense by eval and shown by inspect, both with exit 0; now both refuse it naming the
// file and the tensor. (A packed linear's scales with another dtype were refused already.)
TEST_F(CliInputs, AFloatTensorStoredAsAnIntegerIsRefused) {
  need_w4();
  const std::string norm = "model.layers.0.input_layernorm.weight", scales = "model.layers.1.mlp.up_proj.scales";
  const fs::path as_i32 = packed_copy_with(dir_ / "w4", dir_ / "w4-norm-i32", [&](nlohmann::json& h, std::string&, size_t) {
    ASSERT_EQ(h[norm]["dtype"], "F32");
    h[norm]["dtype"] = "I32";  // the same 4 bytes a value: only the header says otherwise
  });
  const fs::path file = as_i32 / "model.safetensors";
  const RunResult inspect = run_fsq({"inspect", as_i32.string()});
  expect_error(inspect, file.string() + ": tensor '" + norm + "'", "stored as I32");
  EXPECT_TRUE(inspect.out.empty()) << inspect.out;
  const fs::path text = write("eval-i32.txt", testing::tail_of(tinystories_val(), 20'000));
  const RunResult eval = run_fsq({"eval", "--model", as_i32.string(), "--data", text.string(), "--max-windows", "2",
                                  "--seq-len", "64", "--no-speed", "--threads", "1", "--progress", "off"});
  expect_error(eval, file.string() + ": tensor '" + norm + "'", "stored as I32");

  const fs::path scales_i16 = packed_copy_with(dir_ / "w4", dir_ / "w4-scales-i16", [&](nlohmann::json& h, std::string&, size_t) {
    ASSERT_EQ(h[scales]["dtype"], "F16");
    h[scales]["dtype"] = "I16";
  });
  expect_error(run_fsq({"inspect", scales_i16.string()}), "'" + scales + "'", "wrong dtype");
}

// Item 8: inspect checks the finiteness eval checks. A NaN in a norm of a packed folder whose
// fsq.json was written with that NaN (so every sha256 matches) was shown with exit 0.
TEST_F(CliInputs, InspectRefusesANonFiniteUnquantizedTensorOfAPackedFolder) {
  need_w4();
  for (const char* name : {"model.norm.weight", "model.layers.4.post_attention_layernorm.weight"}) {
    SCOPED_TRACE(name);
    const fs::path copy = dir_ / (std::string("w4-nan-") + name);
    std::string digest;
    packed_copy_with(dir_ / "w4", copy, [&](nlohmann::json& h, std::string& bytes, size_t data_at) {
      const size_t begin = data_at + h[name]["data_offsets"][0].get<size_t>();
      const size_t end = data_at + h[name]["data_offsets"][1].get<size_t>();
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(bytes.data() + begin + 4, &nan, 4);  // flat index 1
      digest = sha256_hex(std::string_view(bytes).substr(begin, end - begin));
    });
    nlohmann::json manifest = read_json(copy / "fsq.json");
    ASSERT_TRUE(manifest["tensor_sha256"].contains(name));
    manifest["tensor_sha256"][name] = digest;
    testing::write_file(copy / "fsq.json", manifest.dump(2));
    const RunResult r = run_fsq({"inspect", copy.string()});
    expect_error(r, (copy / "model.safetensors").string() + ": tensor '" + name + "'",
                 "holds a non-finite value (nan at flat index 1)");
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

// Item 7: running out of memory (LibTorch's allocator, here under a data limit) says so in one
// line naming the options that size the buffers, not in the allocator's own words.
TEST_F(CliInputs, OutOfMemoryIsOneLineNamingTheBatchSize) {
  const fs::path text = write("oom.txt", testing::tail_of(tinystories_val(), 2'000'000));
  const fs::path err = dir_ / "oom.err";
  const pid_t pid = ::fork();
  if (pid == 0) {
    // 768 MiB of data: a stories260K eval needs about 300 MiB, the whole text in one batch
    // of 512-token windows several GiB.
    const rlimit limit{768ull << 20, 768ull << 20};
    ::setrlimit(RLIMIT_DATA, &limit);
    std::freopen("/dev/null", "r", stdin);
    std::freopen("/dev/null", "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    ::execl(FSQ_BINARY, FSQ_BINARY, "eval", "--model", stories260k_dir().c_str(), "--data", text.c_str(), "--seq-len",
            "512", "--batch-size", "100000", "--no-speed", "--threads", "1", "--progress", "off", nullptr);
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = testing::read_file(err);
  expect_error(r, "out of memory", "lower --batch-size");
  EXPECT_EQ(r.err.find("DefaultCPUAllocator"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.rfind("fsq: error: out of memory", 0), 0u) << r.err;
}

}  // namespace
}  // namespace fsq::clitest
