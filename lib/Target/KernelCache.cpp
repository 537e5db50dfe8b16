//===- KernelCache.cpp - per-kernel PTX pieces and their on-disk cache ---===//

#include "Vortex/Target/KernelCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <chrono>
#include <cstring>
#include <tuple>

using namespace mlir;
using namespace mlir::vortex;

/// Bumped when what an entry holds, or how its key is formed, changes.
static constexpr llvm::StringLiteral kCacheFormat = "vortex-kernel-cache-2";

/// The length of `cachedKernelName()`: the longest kernel name a shared cubin
/// entry can take (longer ones get entries of their own).
static constexpr size_t kCachedKernelNameLength = 256;

FailureOr<KernelCache> KernelCache::open(StringRef dir, std::string &error) {
  if (dir.empty()) {
    error = "the kernel cache directory is empty";
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = ("cannot create the kernel cache directory '" + dir +
             "': " + ec.message())
                .str();
    return failure();
  }
  if (!llvm::sys::fs::is_directory(dir)) {
    error = ("the kernel cache '" + dir + "' is not a directory").str();
    return failure();
  }
  return KernelCache(dir.str());
}

FailureOr<std::optional<KernelCache>>
KernelCache::openForCompile(StringRef cacheDir, StringRef prebuiltDir,
                            std::string &error) {
  if (cacheDir.empty()) {
    if (prebuiltDir.empty())
      return std::optional<KernelCache>();
    return std::optional<KernelCache>(prebuiltOnly(prebuiltDir));
  }
  FailureOr<KernelCache> cache = open(cacheDir, error);
  if (failed(cache))
    return failure();
  if (!prebuiltDir.empty())
    cache->addPrebuilt(prebuiltDir);
  return std::optional<KernelCache>(std::move(*cache));
}

std::string KernelCache::key(ArrayRef<StringRef> parts) {
  llvm::SHA256 hash;
  hash.update(kCacheFormat);
  for (StringRef part : parts) {
    hash.update(std::to_string(part.size()) + ":");
    hash.update(part);
  }
  std::array<uint8_t, 32> digest = hash.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string KernelCache::fileIdentity(StringRef path) {
  SmallString<256> real;
  llvm::sys::fs::file_status status;
  if (path.empty() || llvm::sys::fs::real_path(path, real) ||
      llvm::sys::fs::status(real, status))
    return "";
  return (real + ":" + Twine(status.getSize()) + ":" +
          Twine(status.getLastModificationTime().time_since_epoch().count()))
      .str();
}

/// The entry `<key>.<kind>` of the directory `dir`.
static std::string entryPath(StringRef dir, StringRef key, StringRef kind) {
  SmallString<256> p(dir);
  llvm::sys::path::append(p, key + "." + kind);
  return std::string(p);
}

std::string KernelCache::path(StringRef key, StringRef kind) const {
  return dir.empty() ? "" : entryPath(dir, key, kind);
}

/// The first line of an entry: what it is, so that an entry read under
/// another key (copied, swapped) is a miss. Entries are under the cache's
/// kernel name, so their contents alone would not tell.
static std::string entryHeader(StringRef key, StringRef kind) {
  return (kCacheFormat + " " + key + "." + kind + "\n").str();
}

/// The entry `<key>.<kind>` of `dir`, less its first line.
static std::optional<std::string> readEntry(StringRef dir, StringRef key,
                                            StringRef kind) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(entryPath(dir, key, kind), /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return std::nullopt;
  StringRef bytes = (*buffer)->getBuffer();
  if (!bytes.consume_front(entryHeader(key, kind)))
    return std::nullopt;
  return bytes.str();
}

std::optional<std::string> KernelCache::lookup(StringRef key,
                                               StringRef kind) const {
  if (!dir.empty())
    if (std::optional<std::string> hit = readEntry(dir, key, kind))
      return hit;
  for (const std::string &other : prebuilt) {
    if (std::optional<std::string> hit = readEntry(other, key, kind)) {
      // Copied so that the entry is this cache's from now on (trim, a
      // caller that finds it bad and replaces it); not stored is no loss.
      (void)store(key, kind, *hit);
      return hit;
    }
  }
  return std::nullopt;
}

void KernelCache::markUsed(StringRef key, StringRef kind) const {
  // trim removes the entries used longest ago first; prebuilt entries are
  // never touched.
  if (dir.empty())
    return;
  int fd;
  if (llvm::sys::fs::openFileForRead(path(key, kind), fd))
    return;
  (void)llvm::sys::fs::setLastAccessAndModificationTime(
      fd, std::chrono::system_clock::now());
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
}

/// Whether `name` is an entry (`<64 hex digits>.<kind>`) or an entry's
/// temporary file (`<entry>.tmp-<random>`).
static bool isEntryName(StringRef name, bool &temporary) {
  size_t tmp = name.find(".tmp-");
  temporary = tmp != StringRef::npos;
  StringRef entry = temporary ? name.take_front(tmp) : name;
  auto [key, kind] = entry.split('.');
  return key.size() == 64 && llvm::all_of(key, llvm::isHexDigit) &&
         (kind == "ptx" || kind == "cubin");
}

void KernelCache::trim(uint64_t maxBytes) const {
  if (dir.empty())
    return;
  struct File {
    std::string path;
    uint64_t size;
    llvm::sys::TimePoint<> used;
  };
  SmallVector<File> entries;
  uint64_t keptBytes = 0;
  auto stale = std::chrono::system_clock::now() - std::chrono::hours(1);
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    bool temporary;
    if (!isEntryName(llvm::sys::path::filename(it->path()), temporary))
      continue;
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    File file{it->path(), status.getSize(),
              status.getLastModificationTime()};
    if (temporary) {
      // Another compile may be writing it; one an hour old was left behind.
      if (file.used < stale)
        (void)llvm::sys::fs::remove(file.path);
      continue;
    }
    keptBytes += file.size;
    entries.push_back(std::move(file));
  }
  llvm::sort(entries, [](const File &a, const File &b) {
    return std::tie(a.used, a.path) < std::tie(b.used, b.path);
  });
  for (const File &file : entries) {
    if (keptBytes <= maxBytes)
      break;
    if (!llvm::sys::fs::remove(file.path))
      keptBytes -= file.size;
  }
}

bool KernelCache::store(StringRef key, StringRef kind,
                        StringRef bytes) const {
  // prebuiltOnly keeps nothing, by design: not a failure to warn about.
  if (dir.empty())
    return true;
  std::string entry = path(key, kind);
  SmallString<256> temp;
  int fd;
  if (llvm::sys::fs::createUniqueFile(entry + ".tmp-%%%%%%%%", fd, temp))
    return false;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << entryHeader(key, kind) << bytes;
    // Closing here reports a failed close as an error, not a fatal one.
    os.close();
    if (os.has_error()) {
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return false;
    }
  }
  if (llvm::sys::fs::rename(temp, entry)) {
    llvm::sys::fs::remove(temp);
    return false;
  }
  return true;
}

static bool isEntryLine(StringRef line) {
  return line.starts_with(".visible .entry") || line.starts_with(".entry");
}

// Module scope is every line that starts with '.': inside a function every
// line is indented, and a label starts with '$'.
bool mlir::vortex::isKernelPTXTopLevel(StringRef line) {
  return line.starts_with(".version") || line.starts_with(".target") ||
         line.starts_with(".address_size") || isEntryLine(line) ||
         line.starts_with(".maxntid") || line.starts_with(".reqntid") ||
         line.starts_with(".minnctapersm") || line.starts_with(".maxnreg") ||
         line.starts_with(".maxclusterrank") ||
         line.starts_with(".reqnctapercluster") ||
         line.starts_with(".explicitcluster");
}

/// The kernel an entry line declares: `.visible .entry name(`.
static StringRef entryName(StringRef line) {
  StringRef rest = line.substr(line.find(".entry") + strlen(".entry"));
  return rest.ltrim().take_until([](char c) { return c == '(' || c == ' '; });
}

/// A PTX module's header (up to its `.address_size` line) and the rest.
static std::optional<std::pair<StringRef, StringRef>>
splitHeader(StringRef ptx) {
  ptx = ptx.rtrim('\0');
  size_t headerEnd = ptx.find("\n.address_size");
  if (headerEnd == StringRef::npos)
    return std::nullopt;
  headerEnd = ptx.find('\n', headerEnd + 1);
  if (headerEnd == StringRef::npos)
    return std::nullopt;
  return std::make_pair(ptx.take_front(headerEnd + 1),
                        ptx.drop_front(headerEnd + 1));
}

bool mlir::vortex::isKernelPTX(StringRef ptx, StringRef kernel) {
  std::optional<std::pair<StringRef, StringRef>> parts = splitHeader(ptx);
  if (!parts)
    return false;
  SmallVector<StringRef> lines;
  parts->second.split(lines, '\n');
  return llvm::any_of(lines, [&](StringRef line) {
    return isEntryLine(line) && entryName(line) == kernel;
  });
}

std::optional<std::string>
mlir::vortex::joinKernelPTX(ArrayRef<SmallVector<char, 0>> pieces) {
  if (pieces.empty())
    return std::nullopt;
  std::string joined, header;
  for (const SmallVector<char, 0> &bytes : pieces) {
    std::optional<std::pair<StringRef, StringRef>> parts =
        splitHeader(StringRef(bytes.data(), bytes.size()));
    if (!parts)
      return std::nullopt;
    auto [pieceHeader, rest] = *parts;
    int entries = 0;
    SmallVector<StringRef> lines;
    rest.split(lines, '\n');
    for (StringRef line : lines) {
      if (!line.starts_with("."))
        continue;
      if (!isKernelPTXTopLevel(line))
        return std::nullopt;
      entries += isEntryLine(line);
    }
    if (entries != 1)
      return std::nullopt;
    // The directives, without the generator's comment above them.
    StringRef directives = pieceHeader.substr(pieceHeader.find(".version"));
    if (joined.empty()) {
      header = directives.str();
      joined = (pieceHeader + rest).str();
    } else if (directives != header) {
      return std::nullopt;
    } else {
      joined += rest;
    }
  }
  return joined;
}

std::optional<SmallVector<PTXKernel>>
mlir::vortex::splitPTXByKernel(StringRef ptx) {
  std::optional<std::pair<StringRef, StringRef>> parts = splitHeader(ptx);
  if (!parts)
    return std::nullopt;
  auto [header, body] = *parts;
  SmallVector<StringRef> lines;
  body.split(lines, '\n');
  // Where each kernel's lines start: its entry, and the comments right
  // above it (its `.globl`, its demoted workgroup buffers), which name it
  // and so belong with it; the first kernel also takes what precedes.
  SmallVector<size_t> starts;
  for (auto [i, line] : llvm::enumerate(lines)) {
    if (line.starts_with(".") && !isKernelPTXTopLevel(line))
      return std::nullopt;
    if (!isEntryLine(line))
      continue;
    size_t start = i;
    while (start > 0 && (lines[start - 1].empty() ||
                         lines[start - 1].starts_with("\t//") ||
                         lines[start - 1].starts_with("//")))
      --start;
    starts.push_back(starts.empty() ? 0 : start);
  }
  SmallVector<PTXKernel> kernels;
  for (auto [k, start] : llvm::enumerate(starts)) {
    size_t end = k + 1 < starts.size() ? starts[k + 1] : lines.size();
    PTXKernel kernel;
    kernel.ptx = header.str();
    for (size_t i = start; i < end; ++i) {
      StringRef line = lines[i];
      if (kernel.name.empty() && isEntryLine(line))
        kernel.name = entryName(line).str();
      kernel.ptx += line;
      if (i + 1 < lines.size())
        kernel.ptx += '\n';
    }
    if (kernel.name.empty())
      return std::nullopt;
    kernels.push_back(std::move(kernel));
  }
  if (kernels.empty())
    return std::nullopt;
  return kernels;
}

StringRef mlir::vortex::cachedKernelName() {
  static const std::string name = [] {
    std::string padded = "vortex_cached_kernel_";
    padded.resize(kCachedKernelNameLength, 'x');
    return padded;
  }();
  return name;
}

static bool isIdentifierChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$';
}

/// `token` renamed from the kernel `from` to `to` if it is the kernel's
/// entry, one of its parameters or one of its workgroup buffers.
static std::optional<std::string> renamedToken(StringRef token, StringRef from,
                                               StringRef to) {
  auto isNumber = [](StringRef s) {
    return !s.empty() && llvm::all_of(s, llvm::isDigit);
  };
  if (token == from)
    return to.str();
  StringRef rest = token;
  if (rest.consume_front(from) && rest.consume_front("_param_") &&
      isNumber(rest))
    return (to + "_param_" + rest).str();
  rest = token;
  if (rest.consume_front("__wg_") && rest.consume_front(from) &&
      rest.consume_front("_") && isNumber(rest))
    return ("__wg_" + to + "_" + rest).str();
  return std::nullopt;
}

std::string mlir::vortex::renameKernelInPTX(StringRef ptx, StringRef from,
                                            StringRef to) {
  std::string out;
  out.reserve(ptx.size());
  size_t i = 0;
  while (i < ptx.size()) {
    if (!isIdentifierChar(ptx[i])) {
      out += ptx[i++];
      continue;
    }
    size_t end = i;
    while (end < ptx.size() && isIdentifierChar(ptx[end]))
      ++end;
    StringRef token = ptx.slice(i, end);
    if (std::optional<std::string> renamed = renamedToken(token, from, to))
      out += *renamed;
    else
      out += token;
    i = end;
  }
  return out;
}

std::optional<std::string> mlir::vortex::renameCubinKernel(StringRef cubin,
                                                           StringRef kernel) {
  StringRef from = cachedKernelName();
  if (kernel.empty() || kernel.size() > from.size())
    return std::nullopt;
  llvm::Expected<llvm::object::ELF64LEFile> file =
      llvm::object::ELF64LEFile::create(cubin);
  if (!file) {
    llvm::consumeError(file.takeError());
    return std::nullopt;
  }
  auto sections = file->sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return std::nullopt;
  }
  std::string out = cubin.str();
  int renamed = 0;
  for (const llvm::object::ELF64LE::Shdr &section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_STRTAB)
      continue;
    uint64_t begin = section.sh_offset, size = section.sh_size;
    if (begin > out.size() || size > out.size() - begin)
      return std::nullopt;
    char *table = out.data() + begin;
    StringRef view(table, size);
    for (size_t at = view.find(from); at != StringRef::npos;
         at = view.find(from, at + from.size())) {
      // In place, so only where the name ends: `.text.<name>`, not
      // `<name>_0`, whose tail would be cut off.
      size_t end = at + from.size();
      if (end >= size || table[end] != '\0')
        return std::nullopt;
      std::memcpy(table + at, kernel.data(), kernel.size());
      std::memset(table + at + kernel.size(), 0, from.size() - kernel.size());
      ++renamed;
    }
  }
  if (renamed == 0 || StringRef(out).contains(from))
    return std::nullopt;
  return out;
}
