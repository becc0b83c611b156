/* CRC32C (Castagnoli), the checksum of every chunkfs metadata block.
 * One entry point picks the SSE4.2 instruction when the CPU has it and a
 * slice-by-8 table otherwise; both paths are exported so tests can compare. */
#ifndef CHUNKFS_CRC32C_H
#define CHUNKFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: pass 0 to start, or the value a previous call returned. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* Only valid when crc32c_hw_available() returns nonzero. */
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len);
int crc32c_hw_available(void);

#endif
