// fsq export: a packed checkpoint (fsq quantize) -> a folder an inference engine loads.
// Today: AutoAWQ GEMM, for vLLM and Hugging Face transformers.
#include <cstdio>

#include "common/atomic_file.h"
#include "formats/export/autoawq.h"
#include "formats/packed_checkpoint.h"
#include "options.h"

namespace fsq::cli {
namespace {

struct ExportFlags {
  std::string format;
  std::string input;
  std::string out;
};

int run_export(const ExportFlags& f) {
  // Refuse a busy destination before reading (and hashing) the whole checkpoint.
  check_output_folder(f.out, "--out", {f.input});
  AtomicDir::check_destination(f.out);
  const PackedCheckpoint packed = PackedCheckpoint::open(f.input);
  export_autoawq(packed, f.out);
  std::printf("exported %s -> %s (AutoAWQ GEMM, %zu linears, w4 group %lld)\n", f.input.c_str(), f.out.c_str(),
              packed.linears().size(), static_cast<long long>(packed.linears().front().quant.group_size));
  return 0;
}

}  // namespace

Command add_export_command(CLI::App& root) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* app = root.add_subcommand(
      "export",
      "Export a packed checkpoint (fsq quantize) to a Hugging Face folder an inference engine loads. "
      "autoawq: the AutoAWQ GEMM layout (4-bit, asymmetric, one group size of 32, 64 or 128) that vLLM "
      "and transformers load; other quant types are refused with the reason. Dense tensors become fp16.");
  app->add_option("--format", f->format, "output format")->required()->check(CLI::IsMember({"autoawq"}));
  app->add_option("input", f->input, "packed checkpoint folder")->required()->check(CLI::ExistingDirectory);
  app->add_option("out,--out", f->out, "output folder (must not exist, or be empty)")->required();
  app->footer(examples({"fsq export --format autoawq smollm2-w4g128 smollm2-awq",
                        "fsq export --format autoawq smollm2-w4g128 --out smollm2-awq"}));
  return Command{app, [f] { return run_export(*f); }};
}

}  // namespace fsq::cli
