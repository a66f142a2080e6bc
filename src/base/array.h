/* array.h — growing a malloc'd array as elements are appended. */
#ifndef QWENCHAT_ARRAY_H
#define QWENCHAT_ARRAY_H

#include <stddef.h>

/* Makes the array at *ptr (ptr is the address of a T * variable, elements of `elem`
 * bytes, room for *cap of them) hold at least `need` elements. The capacity doubles
 * (from 16), so n appends cost O(n) copying. 0, or -1 with err_set("out of memory")
 * and the array untouched. */
int arr_reserve(void *ptr, size_t *cap, size_t need, size_t elem);

#endif
