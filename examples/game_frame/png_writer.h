// A minimal PNG writer for the example's screenshots, so that it needs no
// image library: 8-bit RGBA, no filtering, and zlib data made of stored
// (uncompressed) deflate blocks, with the CRC-32 and Adler-32 the format
// requires. The files are larger than a compressing encoder's, and every
// viewer reads them.
#ifndef KILN_EXAMPLES_GAME_FRAME_PNG_WRITER_H_
#define KILN_EXAMPLES_GAME_FRAME_PNG_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace game {

// The PNG file for `width` x `height` RGBA8 pixels, rows top to bottom.
std::vector<uint8_t> encode_png_rgba8(const uint8_t* rgba, uint32_t width, uint32_t height);

// Writes it to `path`; false (after printing why) when the file cannot be written.
bool write_png_rgba8(const std::string& path, const uint8_t* rgba, uint32_t width, uint32_t height);

}  // namespace game

#endif  // KILN_EXAMPLES_GAME_FRAME_PNG_WRITER_H_
