# vm-qemu.hcl: a virtual machine booted from a kernel and an initramfs.
#
#   make images   # builds build/images/vmlinuz and build/images/initramfs.cpio.gz
#   drover job run examples/vm-qemu.hcl
#
# Paths are read on the client. Without /dev/kvm QEMU emulates (TCG):
# expect about ten seconds to userspace.
variable "kernel" {
  type    = string
  default = "build/images/vmlinuz"
}

variable "initrd" {
  type    = string
  default = "build/images/initramfs.cpio.gz"
}

variable "kernel_args" {
  type    = string
  default = "console=ttyS0 quiet"
}

job "vm" {
  group "vm" {
    network {
      port "ssh" {}
    }

    task "vm" {
      driver = "qemu"

      config {
        kernel      = var.kernel
        initrd      = var.initrd
        kernel_args = var.kernel_args
        accelerator = "tcg"
        # Forward the host port labelled "ssh" to port 22 in the guest.
        port_map = {
          ssh = 22
        }
      }

      # A VM gets a graceful ACPI power-down, then is killed after this.
      kill_timeout = "30s"

      resources {
        cpu    = 1000
        memory = 256
      }
    }
  }
}
