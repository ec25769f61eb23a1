// mb_ec: EC private-key operations per second on one core, the multi-buffer kernels (8 lanes per
// call, through the checked OpenSSL-side wrappers of openssl_ec.h: nonce draws, DER encoding,
// peer-key decoding and every result check included) against OpenSSL's EVP in the same binary
// and run. The raw kernels (ec_batch.h, no wrapper) are measured too. Prints the ratio
// mb / OpenSSL per operation at the end (issue 6: X25519 >= 6, P-256 sign >= 4.5, P-384 sign
// >= 20).
//
//   build/bench/micro/mb_ec [--benchmark_min_time=2 --benchmark_repetitions=5]
//
// OpenSSL is measured at its cheapest: one EVP_PKEY_CTX reused (EVP_PKEY_keygen for X25519 key
// generation, EVP_PKEY_derive with the peer set once, EVP_PKEY_sign of a 32-byte digest).

#include <benchmark/benchmark.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/ec_batch.h"
#include "accelgate/crypto/mb/openssl_ec.h"

namespace mb = accelgate::crypto::mb;

namespace {

enum class Op { kX25519Keygen, kX25519Derive, kSign, kEcdh };

struct Case {
  const char* name;  // table row
  Op op;
  mb::EcCurve curve;
  double goal;  // ratio, 0: none
};

const Case kCases[] = {
    {"x25519_keygen", Op::kX25519Keygen, mb::EcCurve::kP256, 6},
    {"x25519_derive", Op::kX25519Derive, mb::EcCurve::kP256, 6},
    {"p256_sign", Op::kSign, mb::EcCurve::kP256, 4.5},
    {"p384_sign", Op::kSign, mb::EcCurve::kP384, 20},
    {"p256_ecdh", Op::kEcdh, mb::EcCurve::kP256, 0},
    {"p384_ecdh", Op::kEcdh, mb::EcCurve::kP384, 0},
};

const char* group(mb::EcCurve c) { return c == mb::EcCurve::kP256 ? "P-256" : "P-384"; }

// Keys are made once per process (not timed).
struct EcKeys {
  EVP_PKEY* ours = nullptr;
  EVP_PKEY* peer = nullptr;
  mb::EcKey key;
  std::vector<uint8_t> peer_point;
};

EcKeys& keys_of(mb::EcCurve curve) {
  static std::map<mb::EcCurve, std::unique_ptr<EcKeys>> all;
  auto& k = all[curve];
  if (!k) {
    k = std::make_unique<EcKeys>();
    k->ours = EVP_EC_gen(group(curve));
    k->peer = EVP_EC_gen(group(curve));
    k->peer_point.resize(1 + 2 * static_cast<size_t>(mb::ec_field_bytes(curve)));
    size_t len = 0;
    if (k->ours == nullptr || k->peer == nullptr ||
        mb::import_ec_key(k->ours, &k->key) != mb::EcImportStatus::kOk ||
        EVP_PKEY_get_octet_string_param(k->peer, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY,
                                        k->peer_point.data(), k->peer_point.size(), &len) != 1) {
      std::fprintf(stderr, "key generation failed\n");
      std::abort();
    }
  }
  return *k;
}

void rate(benchmark::State& state, double per_iteration) {
  state.counters["ops/s"] = benchmark::Counter(
      per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_openssl(benchmark::State& state, Case c) {
  EVP_PKEY_CTX* ctx = nullptr;
  uint8_t digest[32] = {1, 2, 3};
  std::vector<uint8_t> out(256);
  EVP_PKEY* x_ours = nullptr;
  EVP_PKEY* x_peer = nullptr;
  switch (c.op) {
    case Op::kX25519Keygen:
      ctx = EVP_PKEY_CTX_new_from_name(nullptr, "X25519", nullptr);
      EVP_PKEY_keygen_init(ctx);
      break;
    case Op::kX25519Derive:
      x_ours = EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519");
      x_peer = EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519");
      ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, x_ours, nullptr);
      EVP_PKEY_derive_init(ctx);
      EVP_PKEY_derive_set_peer(ctx, x_peer);
      break;
    case Op::kSign:
      ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, keys_of(c.curve).ours, nullptr);
      EVP_PKEY_sign_init(ctx);
      break;
    case Op::kEcdh:
      ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, keys_of(c.curve).ours, nullptr);
      EVP_PKEY_derive_init(ctx);
      EVP_PKEY_derive_set_peer(ctx, keys_of(c.curve).peer);
      break;
  }
  for (auto _ : state) {
    size_t len = out.size();
    int rc = 0;
    if (c.op == Op::kX25519Keygen) {
      EVP_PKEY* k = nullptr;
      rc = EVP_PKEY_keygen(ctx, &k);
      EVP_PKEY_free(k);
    } else if (c.op == Op::kSign) {
      rc = EVP_PKEY_sign(ctx, out.data(), &len, digest, sizeof(digest));
    } else {
      rc = EVP_PKEY_derive(ctx, out.data(), &len);
    }
    if (rc != 1) {
      state.SkipWithError("OpenSSL failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  EVP_PKEY_CTX_free(ctx);
  EVP_PKEY_free(x_ours);
  EVP_PKEY_free(x_peer);
  rate(state, 1);
}

// BM_mb runs eight operations per iteration through the checked wrappers; key generations draw
// their 32 private bytes from RAND_priv_bytes, as an engine would.
void BM_mb(benchmark::State& state, Case c, mb::Backend backend) {
  uint8_t priv[8][32], peer[8][32], out[8][64];
  uint8_t digest[32] = {1, 2, 3};
  std::vector<uint8_t> der[8];
  RAND_bytes(&priv[0][0], sizeof(priv));
  RAND_bytes(&peer[0][0], sizeof(peer));
  mb::X25519CheckedLane x[8];
  mb::EcdsaCheckedLane s[8];
  mb::EcdhCheckedLane d[8];
  EcKeys* k = c.op == Op::kSign || c.op == Op::kEcdh ? &keys_of(c.curve) : nullptr;
  for (int l = 0; l < 8; ++l) {
    x[l] = {priv[l], c.op == Op::kX25519Keygen ? nullptr : peer[l], out[l]};
    if (k != nullptr) {
      s[l] = {&k->key, k->ours, digest, sizeof(digest), &der[l]};
      d[l] = {&k->key, k->ours, k->peer, nullptr, 0, out[l]};
    }
  }
  for (auto _ : state) {
    mb::CheckedOutcome o;
    switch (c.op) {
      case Op::kX25519Keygen:
        RAND_priv_bytes(&priv[0][0], sizeof(priv));
        o = mb::x25519_checked(backend, x);
        break;
      case Op::kX25519Derive:
        o = mb::x25519_checked(backend, x);
        break;
      case Op::kSign:
        o = mb::ecdsa_sign_checked(backend, s);
        break;
      case Op::kEcdh:
        o = mb::ecdh_derive_checked(backend, c.curve, d);
        break;
    }
    if (o.ok != 0xFF) {
      state.SkipWithError("a lane did not pass the kernels");
      break;
    }
    benchmark::ClobberMemory();
  }
  rate(state, 8);
}

// BM_raw runs the batch kernels alone (ec_batch.h): fixed nonces and inputs, no wrapper.
void BM_raw(benchmark::State& state, Case c, mb::Backend backend) {
  uint8_t in[8][64], out[8][64], r[8][48], s[8][48];
  RAND_bytes(&in[0][0], sizeof(in));
  uint8_t digest[32] = {1, 2, 3};
  mb::X25519Lane x[8];
  mb::EcdsaLane e[8];
  mb::EcdhLane d[8];
  EcKeys* k = c.op == Op::kSign || c.op == Op::kEcdh ? &keys_of(c.curve) : nullptr;
  const int len = mb::ec_field_bytes(c.curve);
  for (int l = 0; l < 8; ++l) {
    x[l] = {in[l], c.op == Op::kX25519Keygen ? nullptr : in[l] + 32, out[l]};
    in[l][0] = 0x3F;  // a nonce below n
    if (k != nullptr) {
      e[l] = {&k->key, digest, sizeof(digest), in[l], r[l], s[l]};
      d[l] = {&k->key, k->peer_point.data() + 1, k->peer_point.data() + 1 + len, out[l]};
    }
  }
  for (auto _ : state) {
    uint8_t ok = 0;
    if (c.op == Op::kX25519Keygen || c.op == Op::kX25519Derive) {
      ok = mb::x25519_batch(backend, x).ok;
    } else if (c.op == Op::kSign) {
      ok = mb::ecdsa_sign_batch(backend, c.curve, e).ok;
    } else {
      ok = mb::ecdh_batch(backend, c.curve, d).ok;
    }
    if (ok != 0xFF) {
      state.SkipWithError("a lane did not pass the kernels");
      break;
    }
    benchmark::ClobberMemory();
  }
  rate(state, 8);
}

// RatioReporter is the console reporter plus a table of mb / OpenSSL per operation at the end
// (medians when repetitions are asked for, else the single runs).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type != Run::RT_Iteration && !median) continue;
      const auto it = run.counters.find("ops/s");
      if (it == run.counters.end()) continue;
      const std::string name = run.run_name.str();
      if (median || medians_.count(name) == 0) rates_[name] = it->second.value;
      if (median) medians_[name] = true;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%-14s %12s %12s %12s %12s %9s %9s %6s\n", "op", "openssl/s", "mb ifma/s",
                "raw ifma/s", "mb port./s", "ifma/ossl", "port/ossl", "goal");
    for (const Case& c : kCases) {
      const std::string n = c.name;
      const double ossl = rates_["BM_openssl/" + n];
      const double ifma = rates_["BM_mb/ifma/" + n];
      const double raw = rates_["BM_raw/ifma/" + n];
      const double port = rates_["BM_mb/portable/" + n];
      std::printf("%-14s %12.0f %12.0f %12.0f %12.0f %9.2f %9.2f %6.1f\n", c.name, ossl, ifma, raw,
                  port, ossl > 0 ? ifma / ossl : 0, ossl > 0 ? port / ossl : 0, c.goal);
    }
  }

 private:
  std::map<std::string, double> rates_;
  std::map<std::string, bool> medians_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (!mb::detect_ifma().usable) std::printf("mb ifma: %s\n", mb::detect_ifma().reason);
  for (const Case& c : kCases) {
    const std::string n = c.name;
    benchmark::RegisterBenchmark(("BM_openssl/" + n).c_str(), BM_openssl, c)
        ->Unit(benchmark::kMicrosecond);
    for (mb::Backend b : {mb::Backend::kIfma, mb::Backend::kPortable}) {
      if (b == mb::Backend::kIfma && !mb::detect_ifma().usable) continue;
      std::string suffix = mb::backend_name(b);
      suffix += "/";
      suffix += n;
      benchmark::RegisterBenchmark(("BM_mb/" + suffix).c_str(), BM_mb, c, b)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("BM_raw/" + suffix).c_str(), BM_raw, c, b)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
