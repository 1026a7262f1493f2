// Option groups shared by the subcommands, so every command spells --threads, --device,
// --dtype, --progress and --json the same way and applies them the same way.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/progress.h"
#include "runtime/decoder_choice.h"
#include "runtime/model.h"

namespace fsq::cli {

// A registered subcommand: its parser and what to run once it was parsed. run() returns
// the exit code; it throws fsq::Error / std::exception on failure (main maps them).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_eval_command(CLI::App& root);
Command add_inspect_command(CLI::App& root);
Command add_generate_command(CLI::App& root);
Command add_convert_command(CLI::App& root);
Command add_calibrate_command(CLI::App& root);
Command add_export_command(CLI::App& root);
Command add_quantize_command(CLI::App& root);
Command add_plan_command(CLI::App& root);
Command add_profile_command(CLI::App& root);

struct RuntimeFlags {
  int threads = 0;  // set to hardware concurrency by add_runtime_flags
  std::string device = "cpu";
  std::string dtype = "f32";
  std::string decode_activations = "int8";  // --decode-activations (eval, generate)
  std::string prefill_activations = "int8";  // --prefill-activations (eval, generate)
};

// --threads, --device, --dtype.
void add_runtime_flags(CLI::App* app, RuntimeFlags& flags);
// --decode-activations int8|f32, for the commands that decode (eval, generate).
void add_decode_flags(CLI::App* app, RuntimeFlags& flags);
// --device, --dtype and --decode-activations parsed; throws fsq::Error naming the option.
// --device is parsed here only (fsq::parse_device_request): with `decoder` (fsq eval, fsq
// generate) it is stored there, and cuda or cuda:0 with fsq's CUDA backend compiled asks for
// fsq's CUDA decoder (the model then loads on the CPU; fsq::choose_decoder picks what runs it).
RuntimeOptions runtime_options(const RuntimeFlags& flags, DeviceRequest* decoder = nullptr);
// "float32" / "f32" / "bf16" / "bfloat16" / "fp16" / "float16" -> ScalarType; throws on others.
c10::ScalarType parse_compute_dtype(const std::string& name);
// Applies --threads through fsq::set_threads; returns the count in effect.
int apply_threads(int threads);

// --progress auto|bar|lines|off.
void add_progress_flag(CLI::App* app, std::string& mode);
ProgressMode apply_progress(const std::string& mode);

// --force: replace existing output files (atomically); inputs are never replaced.
void add_force_flag(CLI::App* app, bool& force);
// --allow-overlap (calibrate, quantize): accept calibration text shorter than the windows
// together (see fsq::make_calibration_set); a note on stderr says the windows overlap.
void add_allow_overlap_flag(CLI::App* app, bool& allow);
// Before any work: an output file must not be an input, lie inside an input folder, exist
// without --force, or sit in a missing folder (fsq::check_output_path). Empty `out`: no output.
void check_output_file(const std::string& out, const std::string& option, const std::vector<std::filesystem::path>& inputs,
                       bool force);
// The same for an output folder, which must not exist or be empty.
void check_output_folder(const std::string& out, const std::string& option,
                         const std::vector<std::filesystem::path>& inputs);

// "Examples:" footer text from lines of example command lines.
std::string examples(std::initializer_list<const char*> lines);

}  // namespace fsq::cli
