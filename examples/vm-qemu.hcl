# vm-qemu.hcl: a virtual machine booted from a kernel and an initramfs.
# Needs: qemu-system-x86_64, `make images`, and the images' directory in the
# qemu plugin's image_paths (below); tested by TestE2EQEMU.
#
#   make images   # builds build/images/vmlinuz and build/images/initramfs.cpio.gz
#
# The client only hands qemu files from the alloc dir or from its
# image_paths, so allow the image directory in the agent config:
#
#   plugin "qemu" {
#     config {
#       image_paths = ["/path/to/drover/build/images"]
#     }
#   }
#
#   drover agent -dev -config qemu.hcl
#   drover job run -var kernel=$PWD/build/images/vmlinuz \
#       -var initrd=$PWD/build/images/initramfs.cpio.gz examples/vm-qemu.hcl
#
# Paths are read on the client (relative ones from the task dir). Without
# a usable /dev/kvm QEMU emulates (TCG): expect about ten seconds until the
# guest prints drover-guest-ready on its console (`drover alloc logs`).
variable "kernel" {
  type    = string
  default = "/var/lib/drover/images/vmlinuz"
}

variable "initrd" {
  type    = string
  default = "/var/lib/drover/images/initramfs.cpio.gz"
}

variable "kernel_args" {
  type    = string
  default = "console=ttyS0 quiet"
}

job "vm" {
  group "vm" {
    network {
      port "http" {}
    }

    task "vm" {
      driver = "qemu"

      config {
        kernel      = var.kernel
        initrd      = var.initrd
        kernel_args = var.kernel_args
        # accelerator: kvm when /dev/kvm is usable, else tcg (unless set).
        # Forward the host port labelled "http" to the guest's port 8080,
        # where the test image's busybox httpd answers.
        port_map = {
          http = 8080
        }
      }

      # `job stop` presses the VM's ACPI power button; after this long
      # the VM is quit, then killed.
      kill_timeout = "30s"

      resources {
        cpu    = 1000
        memory = 256
      }
    }
  }
}
