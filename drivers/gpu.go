package drivers

// VendorNvidia is the vendor of NVIDIA device groups (api.NodeDeviceResource)
// and of their device nodes in TaskConfig.Devices (DeviceSpec.Vendor).
const VendorNvidia = "nvidia"

// NvidiaControlDevices are the device nodes every task given an NVIDIA
// GPU needs besides the GPUs' own (api.NodeDevice.DevicePaths). The client
// adds those present on the host to TaskConfig.Devices; drivers expose
// TaskConfig.Devices as given and add none of their own.
var NvidiaControlDevices = []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}
