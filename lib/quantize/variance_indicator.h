// LLM-PQ's variance indicator (Proposition 2) per decoder layer and weight width: for each
// linear o of layer i, omega_{i,b} += sum over weights of S(b)^2 * Var[X_j] / 4, where S(b)
// is the rounding step of the weight's quantization group at width b ((max - min) /
// (2^b - 1), asymmetric, the group size the quantizer uses, with its fallback for widths it
// does not divide) and Var[X_j] the variance of input channel j from the calibration file
// (mean of squares minus squared mean). This is D_W * S^2 * G(X) of the paper evaluated group
// by group and channel by channel instead of with one step and one variance per matrix.
// Width 16 counts as exact (omega 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fsq {

class Checkpoint;
class CalibrationFile;

struct LinearIndicator {
  std::string role;           // ArchSpec linear role (q_proj, ...)
  std::vector<double> omega;  // per width, in the order asked
  double params = 0;          // weights of the linear
};

struct LayerIndicator {
  std::vector<double> omega;  // per width, in the order asked: the sum over `linears`
  double params = 0;          // weights of the layer's linears
  std::vector<LinearIndicator> linears;  // in ArchSpec::linears order
};

// One entry per decoder layer. Throws fsq::Error when the calibration file lacks a linear's
// input statistics.
std::vector<LayerIndicator> variance_indicator(const Checkpoint& ckpt, const CalibrationFile& calib,
                                               const std::vector<int>& widths, int64_t group_size);

}  // namespace fsq
