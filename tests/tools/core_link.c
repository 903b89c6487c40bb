/* tests/tools/core_link.c: an empty program linked with the core's objects alone (make
 * check-layers): every object of sched/core, sched/engine, queue, plugins and the config model is
 * linked with nothing but libc and libm, so a core or engine that needs libyaml, libuv, libcurl,
 * SQLite or cJSON (or a driver's code) fails to link here. */
int main(void)
{
    return 0;
}
