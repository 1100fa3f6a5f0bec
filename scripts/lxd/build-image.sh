#!/bin/sh
# Builds a minimal LXD/Incus unified image (metadata + rootfs) from a static busybox, offline.
# Its /sbin/init brings eth0 up with udhcpc, so an instance on a managed bridge gets an IPv4 lease
# within a second or two, and it exits on SIGPWR so `lxc stop` is clean and quick.
#
# usage: build-image.sh OUTDIR       writes OUTDIR.tar.gz (OUTDIR itself is scratch and removed)
# The busybox comes from the installed busybox-static package (BUSYBOX=/path overrides); only when
# it is missing is the package downloaded with `apt-get download`.
set -eu
W=${1:?usage: build-image.sh OUTDIR (writes OUTDIR.tar.gz)}
BUSYBOX=${BUSYBOX:-/bin/busybox}
rm -rf "$W"; mkdir -p "$W/rootfs/bin"
cd "$W"
R=rootfs

# A dynamically linked busybox would need the host's libc inside the image: insist on a static one.
if [ -x "$BUSYBOX" ] && ! ldd "$BUSYBOX" >/dev/null 2>&1; then
  cp "$BUSYBOX" $R/bin/busybox
else
  apt-get download busybox-static >/dev/null
  dpkg-deb --fsys-tarfile busybox-static_*.deb | tar -x -C $R ./bin/busybox
  rm -f busybox-static_*.deb
fi

mkdir -p $R/sbin $R/usr/bin $R/usr/sbin $R/etc $R/proc $R/sys $R/dev $R/tmp $R/run $R/root $R/var/log $R/usr/share/udhcpc
chmod 1777 $R/tmp
for a in $($R/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox $R/bin/$a; done

# busybox-static ships no udhcpc script; this one configures the lease, the default route and DNS.
cat > $R/usr/share/udhcpc/default.script <<'S'
#!/bin/sh
case "$1" in
  deconfig) ip -4 addr flush dev "$interface"; ip link set "$interface" up ;;
  bound|renew)
    ip -4 addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -n "${router:-}" ] && { ip route del default 2>/dev/null; for r in $router; do ip route add default via "$r" dev "$interface"; break; done; }
    : > /etc/resolv.conf; for d in ${dns:-}; do echo "nameserver $d" >> /etc/resolv.conf; done ;;
esac
exit 0
S
chmod 755 $R/usr/share/udhcpc/default.script

# PID 1. LXC mounts /proc, /sys and /dev itself. The PWR trap is what `lxc stop` sends; without it
# a stop waits for its timeout.
cat > $R/sbin/init <<'S'
#!/bin/sh
trap 'exit 0' TERM PWR INT
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
hostname -F /etc/hostname 2>/dev/null || true
ip link set lo up
ip link set eth0 up 2>/dev/null && udhcpc -i eth0 -b -s /usr/share/udhcpc/default.script -x hostname:$(hostname) >/var/log/udhcpc.log 2>&1
while :; do sleep 3600 & wait $!; done
S
chmod 755 $R/sbin/init
echo 'root:x:0:0:root:/root:/bin/sh' > $R/etc/passwd
echo 'root:x:0:' > $R/etc/group
echo busybox > $R/etc/hostname
: > $R/etc/resolv.conf

cat > metadata.yaml <<M
architecture: $(uname -m)
creation_date: $(date +%s)
properties:
  description: busybox-static test image
  os: busybox
  release: "$($R/bin/busybox | head -1 | sed -n 's/^BusyBox v\([0-9.]*\).*/\1/p')"
templates:
  /etc/hostname:
    when: [create, copy]
    template: hostname.tpl
M
mkdir -p templates; echo '{{ container.name }}' > templates/hostname.tpl
tar --numeric-owner -czf "$W.tar.gz" metadata.yaml templates rootfs
cd / && rm -rf "$W"
echo "$W.tar.gz"
