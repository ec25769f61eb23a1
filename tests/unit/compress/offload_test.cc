// GzipOffload: jobs run on the pool's threads and complete on the loop's thread; the op owns its
// buffers and file, so a submitter that goes away (or a GzipOffload destroyed with jobs in flight)
// leaves nothing dangling (ASan checks); a file that shrank is reported, not compressed; a job
// runs once; the crypto setting does not decide where gzip runs.

#include "accelgate/compress/offload.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "test_data.h"

namespace accelgate::compress {
namespace {

struct Fixture {
  std::unique_ptr<event::EventLoop> loop = std::move(event::EventLoop::create().value());
  config::OffloadSettings settings;
  std::unique_ptr<GzipOffload> offload;

  Fixture() {
    settings.pool_threads = 2;
    auto made = GzipOffload::create(loop.get(), settings);
    EXPECT_TRUE(made.ok());
    if (made.ok()) offload = std::move(*made);
  }

  // run_until runs the loop until |done| is true (checked every millisecond) or |limit| passes.
  bool run_until(const std::function<bool()>& done,
                 std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    event::Timer* self = nullptr;
    event::Timer check(loop.get(), [&] {
      if (done() || std::chrono::steady_clock::now() >= deadline) {
        loop->stop();
        return;
      }
      self->arm(std::chrono::milliseconds(1));
    });
    self = &check;
    check.arm(std::chrono::milliseconds(1));
    loop->run();
    return done();
  }
};

std::shared_ptr<GzipJob> memory_job(const std::vector<uint8_t>& in, Codec codec, int level) {
  auto job = std::make_shared<GzipJob>();
  job->length = in.size();
  job->input = Buffer::allocate(in.size());
  std::copy(in.begin(), in.end(), job->input.data());
  job->output = Buffer::allocate(max_compressed_size(in.size()));
  job->codec = codec;
  job->level = level;
  return job;
}

TEST(GzipOffload, SettingsArePoolWithFallbackWhateverTheCryptoSetting) {
  config::OffloadSettings s;
  s.crypto = "emu";
  s.fallback = false;
  s.pool_threads = 3;
  config::OffloadSettings g = gzip_offload_settings(s);
  EXPECT_EQ(g.crypto, "pool");
  EXPECT_TRUE(g.fallback);
  EXPECT_EQ(g.pool_threads, 3);
  EXPECT_GE(g.op_timeout, std::chrono::hours(1));
}

TEST(GzipOffload, CompressesOnThePoolAndCompletesOnTheLoopThread) {
  Fixture f;
  ASSERT_NE(f.offload, nullptr);
  EXPECT_EQ(f.offload->engine_name(), "pool");
  std::vector<uint8_t> in = testing::make_input(testing::Kind::kJs, 300000);
  auto job = memory_job(in, Codec::kLibdeflate, 6);
  std::thread::id loop_thread = std::this_thread::get_id();
  bool done = false;
  bool on_loop_thread = false;
  bool inline_run = f.offload->submit(job, [&] {
    done = true;
    on_loop_thread = std::this_thread::get_id() == loop_thread;
  });
  ASSERT_FALSE(inline_run);
  ASSERT_TRUE(f.run_until([&] { return done; }));
  EXPECT_TRUE(on_loop_thread);
  ASSERT_TRUE(job->finished());
  ASSERT_TRUE(job->result.compressed);
  EXPECT_EQ(job->result.engine, Codec::kLibdeflate);
  std::vector<uint8_t> back;
  ASSERT_TRUE(testing::gunzip(job->output.data(), job->result.size, &back));
  EXPECT_EQ(back, in);
}

TEST(GzipOffload, ReadsTheFileOnThePoolAndReportsAFileThatShrank) {
  Fixture f;
  ASSERT_NE(f.offload, nullptr);
  char path[] = "/tmp/ag_gzip_offload_test.XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> in = testing::make_input(testing::Kind::kHtml, 200000);
  ASSERT_EQ(::write(fd, in.data(), in.size()), static_cast<ssize_t>(in.size()));
  ::close(fd);

  auto job = std::make_shared<GzipJob>();
  job->fd = ::open(path, O_RDONLY | O_CLOEXEC);
  job->length = in.size();
  job->input = Buffer::allocate(in.size());
  job->output = Buffer::allocate(max_compressed_size(in.size()));
  job->codec = Codec::kIsal;
  bool done = false;
  ASSERT_FALSE(f.offload->submit(job, [&] { done = true; }));
  ASSERT_TRUE(f.run_until([&] { return done; }));
  ASSERT_FALSE(job->read_failed);
  ASSERT_TRUE(job->result.compressed);
  std::vector<uint8_t> back;
  ASSERT_TRUE(testing::gunzip(job->output.data(), job->result.size, &back));
  EXPECT_EQ(back, in);

  auto shrunk = std::make_shared<GzipJob>();
  shrunk->fd = ::open(path, O_RDONLY | O_CLOEXEC);
  shrunk->length = in.size() + 100;  // more than the file has now
  shrunk->input = Buffer::allocate(shrunk->length);
  shrunk->output = Buffer::allocate(max_compressed_size(shrunk->length));
  done = false;
  ASSERT_FALSE(f.offload->submit(shrunk, [&] { done = true; }));
  ASSERT_TRUE(f.run_until([&] { return done; }));
  EXPECT_TRUE(shrunk->read_failed);
  EXPECT_FALSE(shrunk->result.compressed);
  ::unlink(path);
}

TEST(GzipOffload, TheOpOwnsItsJobWhenTheSubmitterLetsGo) {
  Fixture f;
  ASSERT_NE(f.offload, nullptr);
  std::vector<uint8_t> in = testing::make_input(testing::Kind::kJson, size_t{4} << 20);
  int completions = 0;
  for (int i = 0; i < 4; ++i) {
    // The submitter keeps nothing: buffers live on in the op while a pool thread works on them.
    ASSERT_FALSE(f.offload->submit(memory_job(in, Codec::kZlib, 9), [&] { ++completions; }));
  }
  ASSERT_TRUE(f.run_until([&] { return completions == 4; }));
}

TEST(GzipOffload, DestroyedWithJobsInFlightCallsNobody) {
  auto f = std::make_unique<Fixture>();
  ASSERT_NE(f->offload, nullptr);
  std::vector<uint8_t> in = testing::make_input(testing::Kind::kCss, size_t{4} << 20);
  auto called = std::make_shared<int>(0);
  auto job = memory_job(in, Codec::kZlib, 9);
  ASSERT_FALSE(f->offload->submit(job, [called] { ++*called; }));
  // The engines go: a job already on a pool thread is finished for nobody (the device joins its
  // threads), one still queued is dropped with its op. Either way the job's memory stays valid
  // (the op, and here the test, hold it) and no completion reaches anyone.
  f->offload.reset();
  f->run_until([] { return false; }, std::chrono::milliseconds(100));
  EXPECT_EQ(*called, 0);
}

TEST(GzipJob, RunsOnce) {
  std::vector<uint8_t> in = testing::make_input(testing::Kind::kHtml, 1000);
  auto job = memory_job(in, Codec::kZlib, 1);
  EXPECT_TRUE(job->run());
  EXPECT_TRUE(job->finished());
  size_t size = job->result.size;
  EXPECT_FALSE(job->run());
  EXPECT_EQ(job->result.size, size);
}

}  // namespace
}  // namespace accelgate::compress
