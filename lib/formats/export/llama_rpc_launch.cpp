#include "formats/export/llama_rpc_launch.h"

#include <cctype>
#include <set>

#include "common/error.h"
#include "formats/export/shell_quote.h"

namespace fsq {
namespace {

// A node name as a shell variable suffix: letters, digits and _ only.
std::string shell_word(const std::string& node) {
  std::string s;
  for (char c : node) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s.empty() ? "node" : s;
}

}  // namespace

std::string llama_tensor_split(const std::vector<RpcStage>& stages) {
  std::vector<int64_t> counts;
  for (const auto& s : stages)
    if (s.layers > 0) counts.push_back(s.layers);
  if (counts.empty()) throw Error("llama.cpp launch", "the plan has no stage with layers");
  counts.back() += 1;  // the output layer
  std::string out;
  for (int64_t c : counts) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

std::string llama_rpc_launch_script(const std::string& gguf, const std::vector<RpcStage>& stages,
                                    const std::string& plan_path) {
  std::string s =
      "#!/usr/bin/env bash\n"
      "# Written by fsq export --emit-launch from " + plan_path + ": runs " + gguf + "\n"
      "# as that plan's pipeline on llama.cpp's RPC backend, one ggml-rpc-server per stage.\n"
      "#   LLAMA_BIN     folder of llama.cpp's binaries (default: PATH)\n"
      "#   LLAMA_TOOL    main program (default llama-server; llama-perplexity, llama-cli, ...)\n"
      "#   HOST_<node>   address of each node's server (default 127.0.0.1)\n"
      "#   PORT_BASE     first port (default 50052; stage i listens on PORT_BASE + i)\n"
      "#   START_SERVERS 1 (default): start the servers here; 0: they run on their nodes already\n"
      "# Arguments are passed to the main program.\n"
      "set -euo pipefail\n"
      "bin=\"${LLAMA_BIN:+$LLAMA_BIN/}\"\n"
      "port_base=\"${PORT_BASE:-50052}\"\n"
      "pids=()\n"
      "trap 'for p in \"${pids[@]}\"; do kill \"$p\" 2>/dev/null || true; done' EXIT\n";
  std::set<std::string> nodes;
  for (const auto& st : stages)
    if (st.layers > 0 && nodes.insert(shell_word(st.node)).second)
      s += "HOST_" + shell_word(st.node) + "=\"${HOST_" + shell_word(st.node) + ":-127.0.0.1}\"\n";
  std::string rpc;
  int index = 0;
  for (const auto& st : stages) {
    if (st.layers == 0) continue;
    const std::string host = "$HOST_" + shell_word(st.node), port = "$((port_base + " + std::to_string(index) + "))";
    s += "# stage " + std::to_string(index) + ": " + std::to_string(st.layers) + " layers on " + st.device + " (node " +
         st.node + ")\n";
    s += "if [[ \"${START_SERVERS:-1}\" == 1 ]]; then\n"
         "  \"${bin}ggml-rpc-server\" -H \"" + host + "\" -p \"" + port + "\" >&2 &\n"
         "  pids+=($!)\n"
         "fi\n";
    rpc += (rpc.empty() ? "" : ",") + host + ":" + port;
    ++index;
  }
  s += "for hp in $(echo \"" + rpc + "\" | tr ',' ' '); do\n"
       "  for _ in $(seq 100); do (exec 3<>\"/dev/tcp/${hp%:*}/${hp##*:}\") 2>/dev/null && break; sleep 0.1; done\n"
       "done\n";
  s += "\"${bin}${LLAMA_TOOL:-llama-server}\" -m " + shell_single_quoted(gguf) + " --rpc \"" + rpc +
       "\" -ngl 999 --tensor-split " + llama_tensor_split(stages) + " \"$@\"\n";
  return s;
}

}  // namespace fsq
