// common/output_file.h: a new file is written under a unique hidden name made with O_EXCL and
// moved onto its target only when complete; without replace, a target that exists (also one that
// appeared after any check) is kept; links, folders, devices and FIFOs are told apart from
// regular files; a file another process holds an flock on reads as held by a writer.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "common/output_file.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// The files of a folder, hidden ones included.
int entries(const fs::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("TempFile: unique hidden names beside the target, removed unless committed",
          "[common][output_file]") {
  ds::test::TempDir tmp;
  const fs::path target = tmp.path() / "out.h5";
  {
    ds::TempFile a(target), b(target);
    CHECK(a.path() != b.path());
    CHECK(a.path().parent_path() == tmp.path());
    CHECK(a.path().filename().string().rfind(".out.h5.", 0) == 0);
    CHECK(a.path().extension() == ".creating");
    CHECK(fs::is_regular_file(a.path()));
    CHECK(!fs::exists(target));
  }
  CHECK(entries(tmp.path()) == 0);  // neither was committed: both removed
}

TEST_CASE("TempFile: commit moves the whole file, and without replace keeps an existing target",
          "[common][output_file]") {
  ds::test::TempDir tmp;
  const fs::path target = tmp.path() / "r.json";
  ds::write_file_whole(target, "first\n");
  CHECK(slurp(target) == "first\n");
  ds::write_file_whole(target, "second\n");  // replace (the default)
  CHECK(slurp(target) == "second\n");
  {
    ds::TempFile f(target);
    f.write("third\n");
    // the target existed before (or appeared after any check): kept, EEXIST
    try {
      f.commit(target, false);
      FAIL("commit without replace moved over an existing file");
    } catch (const std::system_error& e) {
      CHECK(e.code().value() == EEXIST);
    }
  }
  CHECK(slurp(target) == "second\n");
  CHECK(entries(tmp.path()) == 1);  // the failed temporary is gone
  const fs::path fresh = tmp.path() / "new.txt";
  ds::write_file_whole(fresh, "x", false);
  CHECK(slurp(fresh) == "x");
}

TEST_CASE("TempFile: a link at the target is replaced, never written through",
          "[common][output_file]") {
  ds::test::TempDir tmp;
  const fs::path victim = tmp.path() / "victim.txt", link = tmp.path() / "out.txt";
  put(victim, "precious\n");
  fs::create_symlink(victim, link);
  CHECK(ds::target_state(link) == ds::TargetState::other);
  ds::write_file_whole(link, "report\n");
  CHECK(slurp(victim) == "precious\n");
  CHECK(!fs::is_symlink(link));
  CHECK(slurp(link) == "report\n");
}

TEST_CASE("TempFile: the new file gets the mode any new file gets (0666 & ~umask)",
          "[common][output_file]") {
  ds::test::TempDir tmp;
  const mode_t old = ::umask(022);
  ds::write_file_whole(tmp.path() / "m.txt", "x");
  ::umask(old);
  struct stat st {};
  REQUIRE(::stat((tmp.path() / "m.txt").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
}

TEST_CASE("target_state: absent, regular, held by a writer's lock, or something else",
          "[common][output_file]") {
  ds::test::TempDir tmp;
  const fs::path f = tmp.path() / "t.h5";
  CHECK(ds::target_state(f) == ds::TargetState::absent);
  put(f, "x");
  CHECK(ds::target_state(f) == ds::TargetState::regular);
  CHECK(!ds::held_by_writer(f));
  {
    // A writer's lock is held through another open file description, as another process has it.
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
    CHECK(ds::held_by_writer(f));
    CHECK(ds::target_state(f) == ds::TargetState::held);
    ::close(fd);
  }
  CHECK(ds::target_state(f) == ds::TargetState::regular);
  CHECK(ds::target_state(tmp.path()) == ds::TargetState::other);  // a folder
  CHECK(ds::target_state("/dev/null") == ds::TargetState::other);
  const fs::path fifo = tmp.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(ds::target_state(fifo) == ds::TargetState::other);
  CHECK(!ds::held_by_writer(fifo));  // opened without blocking, and not a writer's file
}

TEST_CASE("write_file_or_fail: the reason and a hint for that reason", "[common][output]") {
  ds::test::TempDir dir;
  put(dir.path() / "file", "x");
  auto message_of = [](const fs::path& p) -> std::pair<std::string, std::string> {
    try {
      ds::write_file_or_fail(p, "text");
    } catch (const ds::Error& e) {
      return {e.what(), e.hint()};
    }
    return {"", ""};
  };
  // sweep.json's and sweep.sbatch's writes said "cannot write '...'" with no hint at all
  const auto [missing, missing_hint] = message_of(dir.path() / "no" / "such.json");
  CHECK(missing.ends_with("such.json': No such file or directory"));
  CHECK(missing_hint.find("create it first") != std::string::npos);
  const auto [under_file, under_file_hint] = message_of(dir.path() / "file" / "x.json");
  CHECK(under_file.ends_with("x.json': Not a directory"));
  CHECK(under_file_hint.find("is a file, not a folder") != std::string::npos);
}
