// mb_rsa: RSA private operations per second on one core, the multi-buffer kernels (8 lanes per
// call, all back ends available here) against OpenSSL's EVP_PKEY_sign (PKCS#1 v1.5, SHA-256
// digest input, OpenSSL's own blinding and CRT) in the same binary and run. Prints the ratio
// mb / OpenSSL per size at the end (issue 5: RSA-2048 >= 3.7, RSA-3072/4096 >= 6).
//
//   build/bench/micro/mb_rsa [--benchmark_min_time=2]

#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/openssl_rsa.h"
#include "accelgate/crypto/mb/rsa_batch.h"

namespace mb = accelgate::crypto::mb;

namespace {

// BenchKey is a fresh key per size, generated once per process (key generation is not timed).
struct BenchKey {
  EVP_PKEY* pkey = nullptr;
  mb::RsaKey key;
};

BenchKey& key_of(int bits) {
  static std::map<int, std::unique_ptr<BenchKey>> keys;
  auto& k = keys[bits];
  if (!k) {
    k = std::make_unique<BenchKey>();
    k->pkey = EVP_RSA_gen(static_cast<unsigned>(bits));
    if (k->pkey == nullptr || mb::import_rsa_key(k->pkey, &k->key) != mb::ImportStatus::kOk) {
      std::fprintf(stderr, "key generation failed\n");
      std::abort();
    }
  }
  return *k;
}

// BM_mb runs batches of eight private operations (eight different inputs, one key: the
// kernels' time does not depend on how many keys a batch mixes) and counts operations.
void BM_mb(benchmark::State& state, mb::Backend backend) {
  const int bits = static_cast<int>(state.range(0));
  BenchKey& k = key_of(bits);
  const auto bytes = static_cast<size_t>(k.key.modulus_bytes());
  std::vector<uint8_t> in(8 * bytes), out(in.size());
  RAND_bytes(in.data(), static_cast<int>(in.size()));
  mb::RsaLane lanes[8];
  for (size_t l = 0; l < 8; ++l) {
    in[l * bytes] = 0;  // below n
    lanes[l] = {&k.key, &in[l * bytes], &out[l * bytes]};
  }
  for (auto _ : state) {
    const mb::BatchOutcome outcome = mb::rsa_private_batch(backend, lanes);
    benchmark::DoNotOptimize(outcome);
    if (outcome.verified != 0xFF) state.SkipWithError("lane failed its check");
  }
  state.counters["ops/s"] = benchmark::Counter(8.0 * static_cast<double>(state.iterations()),
                                               benchmark::Counter::kIsRate);
}

void BM_openssl(benchmark::State& state) {
  const int bits = static_cast<int>(state.range(0));
  BenchKey& k = key_of(bits);
  uint8_t digest[32] = {1, 2, 3};
  std::vector<uint8_t> sig(static_cast<size_t>(EVP_PKEY_get_size(k.pkey)));
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, k.pkey, nullptr);
  if (EVP_PKEY_sign_init(ctx) != 1 || EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) != 1 ||
      EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1) {
    state.SkipWithError("EVP_PKEY_sign_init failed");
  }
  for (auto _ : state) {
    size_t len = sig.size();
    if (EVP_PKEY_sign(ctx, sig.data(), &len, digest, sizeof(digest)) != 1) {
      state.SkipWithError("EVP_PKEY_sign failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  EVP_PKEY_CTX_free(ctx);
  state.counters["ops/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// RatioReporter is the console reporter plus a table of mb / OpenSSL per size at the end: of the
// medians with --benchmark_repetitions (also with --benchmark_report_aggregates_only), else of
// the single run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      const std::string name = run.run_name.str();
      if (!median && (run.run_type != Run::RT_Iteration || medians_.count(name) != 0)) continue;
      const auto it = run.counters.find("ops/s");
      if (it == run.counters.end()) continue;
      rates_[name] = it->second.value;
      if (median) medians_.insert(name);
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%s\n%-10s %14s %14s %14s %8s %8s\n",
                medians_.empty() ? "single runs:" : "medians of the repetitions:", "size",
                "openssl ops/s", "mb ifma ops/s", "mb port. ops/s", "ifma/ossl", "port/ossl");
    for (int bits : {2048, 3072, 4096}) {
      const std::string arg = "/" + std::to_string(bits);
      const double ossl = rates_["BM_openssl" + arg];
      const double ifma = rates_["BM_mb/ifma" + arg];
      const double port = rates_["BM_mb/portable" + arg];
      std::printf("RSA-%-6d %14.0f %14.0f %14.0f %8.2f %8.2f\n", bits, ossl, ifma, port,
                  ossl > 0 ? ifma / ossl : 0, ossl > 0 ? port / ossl : 0);
    }
  }

 private:
  std::map<std::string, double> rates_;
  std::set<std::string> medians_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (int bits : {2048, 3072, 4096}) {
    benchmark::RegisterBenchmark("BM_openssl", BM_openssl)
        ->Arg(bits)
        ->Unit(benchmark::kMicrosecond);
    if (mb::detect_ifma().usable) {
      benchmark::RegisterBenchmark("BM_mb/ifma", BM_mb, mb::Backend::kIfma)
          ->Arg(bits)
          ->Unit(benchmark::kMicrosecond);
    } else {
      std::printf("mb ifma: %s\n", mb::detect_ifma().reason);
    }
    benchmark::RegisterBenchmark("BM_mb/portable", BM_mb, mb::Backend::kPortable)
        ->Arg(bits)
        ->Unit(benchmark::kMicrosecond);
  }
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
