// codecs: gzip compression throughput (MB/s of input per core, CPU time) and output size, per
// codec and level, on a corpus of web files compressed one file at a time, as the server does
// (issue 7: bench/micro/codecs). Three families:
//
//   nginx/<codec>/<level>   accelgate's Encoder in whole-buffer mode at nginx level 1-9 (mapped
//                           onto the codec's own level as src/compress/codec.cc says)
//   native/<codec>/<level>  the codec at its own level, called directly (the data the level
//                           maps rest on: zlib 1-9, isal 0-3, libdeflate 1-12)
//   stream/<codec>/<level>  the Encoder in streaming mode, 16 KiB of input per write()
//
// Counters: "ratio" (output bytes / input bytes) and "vs_zlib" (output / zlib's output at the
// same nginx level; nginx family only). The corpus is /tmp/webcorpus/files (built by
// shared/bench/corpus.sh) or $AG_CORPUS.
//
//   build/bench/micro/codecs --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>
#include <dirent.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accelgate/compress/codec.h"

namespace gz = accelgate::compress;

namespace {

struct Corpus {
  std::vector<std::string> files;
  size_t bytes = 0;
  size_t largest = 0;
};

const Corpus& corpus() {
  static const Corpus c = [] {
    Corpus out;
    const char* env = std::getenv("AG_CORPUS");
    std::string dir = env != nullptr ? env : "/tmp/webcorpus/files";
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      std::fprintf(stderr,
                   "codecs: no corpus at %s (run shared/bench/corpus.sh or set AG_CORPUS)\n",
                   dir.c_str());
      std::exit(2);
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      std::ifstream f(dir + "/" + n, std::ios::binary);
      out.files.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
      out.bytes += out.files.back().size();
      out.largest = std::max(out.largest, out.files.back().size());
    }
    return out;
  }();
  return c;
}

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// zlib_out[level] is zlib's total output at that level, for vs_zlib (measured on first use).
std::map<int, double>& zlib_out() {
  static std::map<int, double> m;
  return m;
}

void finish(benchmark::State& state, size_t in, size_t out) {
  state.SetBytesProcessed(static_cast<int64_t>(in) * static_cast<int64_t>(state.iterations()));
  state.counters["ratio"] = static_cast<double>(out) / static_cast<double>(in);
}

void BM_nginx(benchmark::State& state, gz::Codec codec) {
  const int level = static_cast<int>(state.range(0));
  const Corpus& c = corpus();
  auto encoder = gz::make_encoder(codec);
  std::vector<uint8_t> out(gz::max_compressed_size(c.largest));
  size_t total = 0;
  for (auto _ : state) {
    total = 0;
    for (const std::string& f : c.files) {
      auto n = encoder->compress(bytes_of(f), out, level);
      if (!n) {
        state.SkipWithError("compression failed");
        return;
      }
      total += *n;
    }
  }
  finish(state, c.bytes, total);
  if (codec == gz::Codec::kZlib) zlib_out()[level] = static_cast<double>(total);
  if (auto it = zlib_out().find(level); it != zlib_out().end()) {
    state.counters["vs_zlib"] = static_cast<double>(total) / it->second;
  }
  state.SetLabel("native level " + std::to_string(gz::codec_level(codec, level)));
}

void BM_stream(benchmark::State& state, gz::Codec codec) {
  const int level = static_cast<int>(state.range(0));
  const Corpus& c = corpus();
  auto encoder = gz::make_encoder(codec);
  std::vector<uint8_t> out(gz::max_compressed_size(c.largest));
  constexpr size_t kChunk = 16 * 1024;
  size_t total = 0;
  for (auto _ : state) {
    total = 0;
    for (const std::string& f : c.files) {
      encoder->begin(level);
      std::span<const uint8_t> in = bytes_of(f);
      std::span<uint8_t> space(out);
      gz::Encoder::Status s = gz::Encoder::Status::kOk;
      while (s == gz::Encoder::Status::kOk) {
        std::span<const uint8_t> piece = in.first(std::min(kChunk, in.size()));
        in = in.subspan(piece.size());
        gz::Flush flush = in.empty() ? gz::Flush::kFinish : gz::Flush::kNone;
        do {
          s = encoder->write(piece, space, flush);
        } while (s == gz::Encoder::Status::kOk && !piece.empty());
        if (!in.empty() && s == gz::Encoder::Status::kDone) s = gz::Encoder::Status::kError;
      }
      if (s != gz::Encoder::Status::kDone) {
        state.SkipWithError("compression failed");
        return;
      }
      total += out.size() - space.size();
    }
  }
  finish(state, c.bytes, total);
}

void BM_native_isal(benchmark::State& state) {
  const int level = static_cast<int>(state.range(0));
  const Corpus& c = corpus();
  std::vector<uint8_t> out(gz::max_compressed_size(c.largest));
  std::vector<uint8_t> level_buf(ISAL_DEF_LVL3_DEFAULT);
  isal_zstream s{};
  isal_deflate_init(&s);
  size_t total = 0;
  for (auto _ : state) {
    total = 0;
    for (const std::string& f : c.files) {
      isal_deflate_reset(&s);
      s.level = static_cast<uint32_t>(level);
      s.level_buf = level_buf.data();
      s.level_buf_size = static_cast<uint32_t>(level_buf.size());
      s.gzip_flag = IGZIP_GZIP;
      s.end_of_stream = 1;
      s.flush = NO_FLUSH;
      s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(f.data()));
      s.avail_in = static_cast<uint32_t>(f.size());
      s.next_out = out.data();
      s.avail_out = static_cast<uint32_t>(out.size());
      if (isal_deflate_stateless(&s) != COMP_OK) {
        state.SkipWithError("isal failed");
        return;
      }
      total += s.total_out;
    }
  }
  finish(state, c.bytes, total);
}

void BM_native_libdeflate(benchmark::State& state) {
  const int level = static_cast<int>(state.range(0));
  const Corpus& c = corpus();
  std::vector<uint8_t> out(gz::max_compressed_size(c.largest));
  libdeflate_compressor* comp = libdeflate_alloc_compressor(level);
  size_t total = 0;
  for (auto _ : state) {
    total = 0;
    for (const std::string& f : c.files) {
      total += libdeflate_gzip_compress(comp, f.data(), f.size(), out.data(), out.size());
    }
  }
  libdeflate_free_compressor(comp);
  finish(state, c.bytes, total);
}

void register_all() {
  // zlib first at each level, so the others can report vs_zlib.
  for (gz::Codec codec : gz::kAllCodecs) {
    std::string name = "nginx/" + std::string(gz::codec_name(codec));
    benchmark::RegisterBenchmark(name.c_str(), BM_nginx, codec)
        ->DenseRange(1, 9)
        ->Unit(benchmark::kMillisecond);
  }
  for (gz::Codec codec : gz::kAllCodecs) {
    std::string name = "stream/" + std::string(gz::codec_name(codec));
    benchmark::RegisterBenchmark(name.c_str(), BM_stream, codec)
        ->Arg(1)
        ->Arg(6)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("native/isal", BM_native_isal)
      ->DenseRange(0, 3)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("native/libdeflate", BM_native_libdeflate)
      ->DenseRange(1, 12)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
