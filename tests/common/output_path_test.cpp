// Special files are never replaced: an output path that is a FIFO, a socket, a character
// device, or a symbolic link to one, is refused by check_output_path (with or without
// --force) and by AtomicFile, and stays what it was. The tests make their own special files
// in a temporary folder; no real /dev node is touched.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_path.h"
#include "temp_dir.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

void make_fifo(const fs::path& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << std::strerror(errno); }

// A bound Unix socket file (the socket itself is closed; the file stays).
void make_socket(const fs::path& p) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(p.string().size(), sizeof addr.sun_path) << p;
  std::strcpy(addr.sun_path, p.c_str());
  const int bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  ::close(fd);
  ASSERT_EQ(bound, 0) << std::strerror(err);
}

// A character device node with /dev/null's numbers, in the temp folder: needs root (CAP_MKNOD).
bool make_char_device(const fs::path& p) { return ::mknod(p.c_str(), S_IFCHR | 0600, ::makedev(1, 3)) == 0; }

fs::file_type type_of(const fs::path& p) { return fs::symlink_status(p).type(); }

// check_output_path refuses `p` (with and without replace_existing) with one line naming the
// option, the path and `kind`, and AtomicFile refuses it too; `p` keeps its type.
void expect_special_refused(const fs::path& p, const std::string& kind) {
  const fs::file_type before = type_of(p);
  for (bool force : {false, true}) {
    try {
      check_output_path({p, "--json", OutputKind::File, force}, {});
      ADD_FAILURE() << p << " accepted (force " << force << ")";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("--json " + p.string()), std::string::npos) << m;
      EXPECT_NE(m.find(kind), std::string::npos) << m;
      EXPECT_NE(m.find("not a regular file"), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
  EXPECT_THROW(write_file_atomic(p, "replaced?"), Error) << p;
  EXPECT_EQ(type_of(p), before) << p << " was replaced";
  // As an output folder it is refused too.
  EXPECT_THROW(check_output_path({p, "--out", OutputKind::Folder, false}, {}), Error);
  EXPECT_THROW(AtomicDir::check_destination(p), Error);
}

TEST(SpecialOutputs, FifoIsRefusedAndStaysAFifo) {
  TempDir dir("fsq-special-out");
  const fs::path fifo = dir / "pipe";
  make_fifo(fifo);
  expect_special_refused(fifo, "FIFO");
  EXPECT_EQ(type_of(fifo), fs::file_type::fifo);
}

TEST(SpecialOutputs, SocketIsRefusedAndStaysASocket) {
  TempDir dir("fsq-special-out");
  const fs::path sock = dir / "sock";
  make_socket(sock);
  expect_special_refused(sock, "socket");
  EXPECT_EQ(type_of(sock), fs::file_type::socket);
}

TEST(SpecialOutputs, SymlinkToAFifoIsRefusedAndStaysALink) {
  TempDir dir("fsq-special-out");
  make_fifo(dir / "pipe");
  const fs::path link = dir / "report.json";
  fs::create_symlink(dir / "pipe", link);
  expect_special_refused(link, "FIFO");
  EXPECT_EQ(type_of(link), fs::file_type::symlink);
  EXPECT_EQ(type_of(dir / "pipe"), fs::file_type::fifo);
}

TEST(SpecialOutputs, CharacterDeviceIsRefusedAndStaysADevice) {
  TempDir dir("fsq-special-out");
  const fs::path dev = dir / "null";
  if (!make_char_device(dev))
    GTEST_SKIP() << "this machine does not let the test make a character device (mknod: " << std::strerror(errno)
                 << "; needs root)";
  expect_special_refused(dev, "character device");
  EXPECT_EQ(type_of(dev), fs::file_type::character);
  // Through a link as well.
  const fs::path link = dir / "out.json";
  fs::create_symlink(dev, link);
  expect_special_refused(link, "character device");
  EXPECT_EQ(type_of(dev), fs::file_type::character);
}

TEST(SpecialOutputs, RegularFilesAndNewNamesAreStillWritten) {
  TempDir dir("fsq-special-out");
  const fs::path file = dir / "report.json";
  EXPECT_NO_THROW(check_output_path({file, "--json", OutputKind::File, false}, {}));
  std::ofstream(file) << "old";
  EXPECT_THROW(check_output_path({file, "--json", OutputKind::File, false}, {}), Error);  // needs --force
  EXPECT_NO_THROW(check_output_path({file, "--json", OutputKind::File, true}, {}));
  write_file_atomic(file, "new");
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "new");
}

}  // namespace
}  // namespace fsq
