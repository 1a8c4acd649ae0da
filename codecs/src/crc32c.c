/* CRC-32C (Castagnoli): table-driven, eight bytes per step; the tables are constants. */
#include "crc32c_table.h"
#include "internal.h"

uint32_t mpiucc_crc32c(uint32_t crc, const void *data, size_t size) {
    const uint8_t *p = (const uint8_t *)data;
    crc = ~crc;
    while (size >= 8) {
        uint32_t lo = crc ^ mpiucc_get_u32(p), hi = mpiucc_get_u32(p + 4);
        crc = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
              crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
              crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
              crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
        p += 8;
        size -= 8;
    }
    while (size--) crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}
