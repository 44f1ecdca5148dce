// A chunk's file address in one step. HDF5 1.10.8 (Debian 12) gives a chunk's address only by
// walking the chunk index from its first chunk (H5Dget_chunk_info_by_coord, H5Dget_chunk_info),
// so locating a dataset's N chunks costs N^2/2 index steps; H5Dread_chunk looks a chunk up
// directly but reads it. The locating driver is HDF5's sec2 file driver passed through (every call
// forwarded to a sec2 file underneath), except that while chunk_address() asks, a raw-data read
// records its address and length instead of reading: H5Dread_chunk then says where the chunk is,
// at the cost of one lookup and no copy. HDF5 1.14's H5Dchunk_iter would make this unneeded.
// A raw-data read that starts past the end of the file fails, where sec2 reads zeros (a file cut
// short).
#pragma once

#include <cstdint>
#include <optional>

#include "trace/h5.h"

namespace ds::trace {

// A file-access property list for reading a trace with the locating driver.
h5::Id locating_fapl();

// Whether `driver` (H5Pget_driver of a file's access list) is the locating driver.
bool is_locating_driver(hid_t driver);

// The file address of the chunk of `dset` at `offset` when it is on disk, unfiltered and exactly
// `bytes` long, in a file opened with locating_fapl(); nullopt otherwise (not written, filtered,
// another size, another driver, an offset outside the dataset: the caller asks the chunk index
// instead).
std::optional<uint64_t> chunk_address(hid_t dset, const hsize_t* offset, uint64_t bytes);

}  // namespace ds::trace
