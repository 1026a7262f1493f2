#include "quantize/rotation/orthogonal.h"

#include <cmath>
#include <numbers>
#include <random>

#include "common/error.h"

namespace fsq {
namespace orthogonal_detail {

// Paley orders beside the 2x2 Sylvester factor; a and b of d = 2^k 12^a 20^b at most 2.
constexpr int64_t kPaleyOrders[] = {12, 20};
constexpr int kMaxPaleyPower = 2;

// Kronecker factor orders of a Hadamard matrix of order d (outermost first), or empty.
std::vector<int64_t> hadamard_factors(int64_t d) {
  if (d < 1) return {};
  for (int a = 0; a <= kMaxPaleyPower; ++a)
    for (int b = 0; b <= kMaxPaleyPower; ++b) {
      int64_t base = 1;
      for (int i = 0; i < a; ++i) base *= kPaleyOrders[0];
      for (int i = 0; i < b; ++i) base *= kPaleyOrders[1];
      if (d % base != 0) continue;
      const int64_t rest = d / base;
      if ((rest & (rest - 1)) != 0) continue;  // not a power of two
      std::vector<int64_t> out;
      for (int i = 0; i < a; ++i) out.push_back(kPaleyOrders[0]);
      for (int i = 0; i < b; ++i) out.push_back(kPaleyOrders[1]);
      for (int64_t r = rest; r > 1; r /= 2) out.push_back(2);
      if (out.empty()) out.push_back(1);
      return out;
    }
  return {};
}

// Legendre symbol of a mod the odd prime q: 0, 1 or -1.
int quadratic_character(int64_t a, int64_t q) {
  a = ((a % q) + q) % q;
  if (a == 0) return 0;
  for (int64_t x = 1; x < q; ++x)
    if ((x * x) % q == a) return 1;
  return -1;
}

std::vector<double> factor_matrix(int64_t order) {
  if (order == 1) return {1.0};
  if (order == 2) return {1.0, 1.0, 1.0, -1.0};
  return paley_hadamard(order - 1);
}

// Standard normal samples from the engine's raw 64-bit output (the engine's sequence is
// fixed by the C++ standard; std::normal_distribution's algorithm is not), Box-Muller.
class BoxMullerGaussian {
 public:
  explicit BoxMullerGaussian(uint64_t seed) : engine_(seed) {}
  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    constexpr double kTwo53 = 9007199254740992.0;
    const double u1 = (static_cast<double>(engine_() >> 11) + 1.0) / (kTwo53 + 1.0);  // (0, 1]
    const double u2 = static_cast<double>(engine_() >> 11) / kTwo53;                  // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * std::numbers::pi * u2;
    spare_ = r * std::sin(t);
    has_spare_ = true;
    return r * std::cos(t);
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// Q of the QR decomposition of g [d, d] (row-major): modified Gram-Schmidt over columns,
// each column orthogonalized twice (one pass loses orthogonality in proportion to the
// condition number). Column norms divide, so R's diagonal is positive.
std::vector<double> orthonormal_columns(std::vector<double> g, int64_t d) {
  for (int64_t j = 0; j < d; ++j) {
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t p = 0; p < j; ++p) {
        double dot = 0.0;
        for (int64_t i = 0; i < d; ++i) dot += g[i * d + p] * g[i * d + j];
        for (int64_t i = 0; i < d; ++i) g[i * d + j] -= dot * g[i * d + p];
      }
    double norm = 0.0;
    for (int64_t i = 0; i < d; ++i) norm += g[i * d + j] * g[i * d + j];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < d; ++i) g[i * d + j] /= norm;
  }
  return g;
}

}  // namespace orthogonal_detail

using namespace orthogonal_detail;

std::vector<double> paley_hadamard(int64_t q) {
  if (q < 3 || q % 4 != 3) throw Error("paley_hadamard", "q must be a prime = 3 mod 4");
  for (int64_t p = 2; p * p <= q; ++p)
    if (q % p == 0) throw Error("paley_hadamard", "q must be a prime = 3 mod 4");
  const int64_t n = q + 1;
  // H = I + S, S = [[0, 1^T], [-1, J]] with J the (skew) Jacobsthal matrix chi(j - i).
  std::vector<double> h(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) h[i * n + i] = 1.0;
  for (int64_t j = 1; j < n; ++j) {
    h[j] += 1.0;
    h[j * n] -= 1.0;
  }
  for (int64_t i = 1; i < n; ++i)
    for (int64_t j = 1; j < n; ++j) h[i * n + j] += quadratic_character((j - 1) - (i - 1), q);
  return h;
}

bool Orthogonal::hadamard_order_known(int64_t d) { return !hadamard_factors(d).empty(); }

Orthogonal Orthogonal::make(int64_t d, RotationKind kind, uint64_t seed, const std::string& where) {
  if (d < 1) throw Error(where, "rotation size must be positive");
  Orthogonal o;
  o.d_ = d;
  o.kind_ = kind;
  o.seed_ = seed;
  if (kind == RotationKind::Random) {
    BoxMullerGaussian gauss(seed);
    std::vector<double> g(static_cast<size_t>(d * d));
    for (double& v : g) v = gauss.next();
    o.dense_ = orthonormal_columns(std::move(g), d);
    return o;
  }
  o.factor_orders_ = hadamard_factors(d);
  if (o.factor_orders_.empty())
    throw Error(where, "no Hadamard matrix of order " + std::to_string(d) +
                           " is built here (orders 2^k * 12^a * 20^b, a, b <= 2); use --rotate random");
  for (int64_t order : o.factor_orders_) o.factors_.push_back(factor_matrix(order));
  std::mt19937_64 engine(seed);
  o.signs_.resize(static_cast<size_t>(d));
  for (double& s : o.signs_) s = (engine() >> 63) != 0 ? -1.0 : 1.0;
  return o;
}

std::string Orthogonal::describe() const {
  std::string s = kind_ == RotationKind::Random ? "random orthogonal (QR of a BoxMullerGaussian)" : "randomized hadamard ";
  if (kind_ == RotationKind::Hadamard)
    for (size_t i = 0; i < factor_orders_.size(); ++i)
      s += (i ? "x" : "") + std::to_string(factor_orders_[i]);
  return s + " d=" + std::to_string(d_) + " seed " + std::to_string(seed_);
}

void Orthogonal::rotate_row(double* x, double* scratch) const {
  if (kind_ == RotationKind::Random) {
    for (int64_t j = 0; j < d_; ++j) scratch[j] = 0.0;
    for (int64_t i = 0; i < d_; ++i) {
      const double xi = x[i];
      const double* qrow = dense_.data() + i * d_;
      for (int64_t j = 0; j < d_; ++j) scratch[j] += xi * qrow[j];
    }
    for (int64_t j = 0; j < d_; ++j) x[j] = scratch[j];
    return;
  }
  for (int64_t i = 0; i < d_; ++i) x[i] *= signs_[static_cast<size_t>(i)];
  // x H with H = F_1 x ... x F_n (Kronecker): along each axis f, y[.., j, ..] = sum_i x[.., i, ..] F_f[i][j].
  int64_t outer = 1;
  for (size_t f = 0; f < factors_.size(); ++f) {
    const int64_t s = factor_orders_[f], inner = d_ / (outer * s);
    const std::vector<double>& m = factors_[f];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t t = 0; t < inner; ++t) {
        double* base = x + o * s * inner + t;
        for (int64_t j = 0; j < s; ++j) {
          double sum = 0.0;
          for (int64_t i = 0; i < s; ++i) sum += base[i * inner] * m[static_cast<size_t>(i * s + j)];
          scratch[j] = sum;
        }
        for (int64_t j = 0; j < s; ++j) base[j * inner] = scratch[j];
      }
    outer *= s;
  }
  const double norm = 1.0 / std::sqrt(static_cast<double>(d_));
  for (int64_t i = 0; i < d_; ++i) x[i] *= norm;
}

void Orthogonal::rotate_rows(double* x, int64_t n) const {
  std::vector<double> scratch(static_cast<size_t>(d_));
  for (int64_t r = 0; r < n; ++r) rotate_row(x + r * d_, scratch.data());
}

void Orthogonal::rotate_columns(double* x, int64_t n) const {
  // Column c of Q^T x is (x_c^T Q)^T: rotate each column as a row.
  std::vector<double> col(static_cast<size_t>(d_)), scratch(static_cast<size_t>(d_));
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t i = 0; i < d_; ++i) col[static_cast<size_t>(i)] = x[i * n + c];
    rotate_row(col.data(), scratch.data());
    for (int64_t i = 0; i < d_; ++i) x[i * n + c] = col[static_cast<size_t>(i)];
  }
}

std::vector<double> Orthogonal::matrix() const {
  std::vector<double> q(static_cast<size_t>(d_ * d_), 0.0);
  for (int64_t i = 0; i < d_; ++i) q[i * d_ + i] = 1.0;
  rotate_rows(q.data(), d_);  // I Q
  return q;
}

}  // namespace fsq
