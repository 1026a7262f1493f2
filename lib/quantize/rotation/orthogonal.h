// The orthogonal matrix Q [d, d] that rotates a model's residual stream (QuaRot, QSpec):
// after x -> x Q, outliers of a few channels are spread over all of them, so a 4-bit
// per-token activation code loses far less. LibTorch-free, double precision, deterministic:
// the same (d, kind, seed) gives the same bits on every run.
//
//  - Hadamard (randomized): Q = D H / sqrt(d), D a diagonal of seeded random signs, H a
//    Hadamard matrix built as a Kronecker product of 2x2 Sylvester factors and Paley-I
//    factors of order 12 and 20 (d = 2^k * 12^a * 20^b, a, b <= 2: 64, 576 = 12*12*4,
//    768, 4096, 5120 = 20*256 ...). Applying it costs d * (sum of factor orders) per row.
//  - Random (any d, the fallback where no such Hadamard exists): the Q factor of the QR
//    decomposition of a seeded Gaussian matrix (modified Gram-Schmidt, twice, in double),
//    its columns' signs fixed so R has a positive diagonal. Applying it costs d^2 per row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fsq {

enum class RotationKind { Hadamard, Random };

class Orthogonal {
 public:
  // Hadamard throws fsq::Error(where, ...) when d has no such factorization; `Random` never.
  static Orthogonal make(int64_t d, RotationKind kind, uint64_t seed, const std::string& where);
  // True when make(d, Hadamard, ...) succeeds.
  static bool hadamard_order_known(int64_t d);

  int64_t size() const { return d_; }
  RotationKind kind() const { return kind_; }
  // "hadamard 12x12x2x2 seed 0", for provenance notes.
  std::string describe() const;

  // x [n, d] row-major, each row replaced by row * Q.
  void rotate_rows(double* x, int64_t n) const;
  // The same for columns: x [d, n] row-major replaced by Q^T x.
  void rotate_columns(double* x, int64_t n) const;
  // Q itself, row-major (tests).
  std::vector<double> matrix() const;

 private:
  void rotate_row(double* x, double* scratch) const;

  int64_t d_ = 0;
  RotationKind kind_ = RotationKind::Hadamard;
  uint64_t seed_ = 0;
  std::vector<double> signs_;                 // Hadamard: D's diagonal
  std::vector<int64_t> factor_orders_;        // Hadamard: Kronecker factors, outermost first
  std::vector<std::vector<double>> factors_;  // their +-1 matrices, row-major
  std::vector<double> dense_;                 // Random: Q row-major
};

// A Hadamard matrix of order q + 1 by Paley's first construction, q a prime = 3 mod 4
// (orders 4, 8, 12, 20, 24, ...): H H^T = (q + 1) I. Row-major.
std::vector<double> paley_hadamard(int64_t q);

}  // namespace fsq
