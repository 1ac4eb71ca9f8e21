// Writes small files in the Nsight Systems SQLite export schema, for the
// importer's tests: no export can be recorded on a machine without a GPU.
// Tables and columns follow NVIDIA's published "SQLite Export Schema
// Reference" (nsys-exporter/exported_data), recent layout: times in ns,
// names as StringIds, globalTid = pid << 24 | tid, and the enum tables
// with the documented ids and names. Only the tables loupe reads, and a
// few columns around them, are created.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace loupe::test {

class NsysExportWriter {
 public:
  explicit NsysExportWriter(const std::string& path) {
    std::remove(path.c_str());
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot create " + path);
    exec("BEGIN");
  }
  ~NsysExportWriter() {
    if (db_) close();
  }
  NsysExportWriter(const NsysExportWriter&) = delete;
  NsysExportWriter& operator=(const NsysExportWriter&) = delete;

  static constexpr int64_t global_tid(int64_t pid, int64_t tid) { return (pid << 24) | tid; }

  // The full set of tables the importer reads, with their enum values.
  void create_schema() {
    exec("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)");
    exec("CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT)");
    const char* opers[][2] = {
        {"CUDA_MEMCPY_OPER_UNKNOWN", "Unknown"},       {"CUDA_MEMCPY_OPER_HTOD", "Host-to-Device"},
        {"CUDA_MEMCPY_OPER_DTOH", "Device-to-Host"},   {"CUDA_MEMCPY_OPER_HTOA", "Host-to-Array"},
        {"CUDA_MEMCPY_OPER_ATOH", "Array-to-Host"},    {"CUDA_MEMCPY_OPER_ATOA", "Array-to-Array"},
        {"CUDA_MEMCPY_OPER_ATOD", "Array-to-Device"},  {"CUDA_MEMCPY_OPER_DTOA", "Device-to-Array"},
        {"CUDA_MEMCPY_OPER_DTOD", "Device-to-Device"}, {"CUDA_MEMCPY_OPER_HTOH", "Host-to-Host"},
        {"CUDA_MEMCPY_OPER_PTOP", "Peer-to-Peer"}};
    for (int i = 0; i < 11; ++i) {
      exec("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (" + std::to_string(i) + ", '" + opers[i][0] + "', '" +
           opers[i][1] + "')");
    }
    exec("CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT)");
    const char* kinds[][2] = {{"UNKNOWN", "Unknown"},
                              {"PAGEABLE", "Pageable"},
                              {"PINNED", "Pinned"},
                              {"DEVICE", "Device"},
                              {"ARRAY", "Array"},
                              {"MANAGED", "Managed"},
                              {"DEVICE_STATIC", "Device Static"},
                              {"MANAGED_STATIC", "Managed Static"}};
    for (int i = 0; i < 8; ++i) {
      exec("INSERT INTO ENUM_CUDA_MEM_KIND VALUES (" + std::to_string(i) + ", 'CUDA_MEMOPR_MEMORY_KIND_" + kinds[i][0] +
           "', '" + kinds[i][1] + "')");
    }
    exec("CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, label TEXT)");
    exec("INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (0, 'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION', 'Allocation')");
    exec("INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (1, 'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION', 'Deallocation')");
    exec("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT)");
    exec(
        "CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, "
        "isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, "
        "smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER)");
    exec(
        "CREATE TABLE ThreadNames (nameId INTEGER NOT NULL REFERENCES StringIds(id), priority INTEGER, "
        "globalTid INTEGER)");
    exec("CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT)");
    exec(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL "
        "REFERENCES StringIds(id), returnValue INTEGER NOT NULL, callchainId INTEGER)");
    exec(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL REFERENCES StringIds(id), "
        "shortName INTEGER NOT NULL REFERENCES StringIds(id), mangledName INTEGER, launchType INTEGER, "
        "cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, "
        "gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, "
        "staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER "
        "NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, "
        "graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER)");
    exec(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL REFERENCES "
        "ENUM_CUDA_MEMCPY_OPER(id), deprecatedSrcId INTEGER, srcKind INTEGER REFERENCES ENUM_CUDA_MEM_KIND(id), "
        "dstKind INTEGER REFERENCES ENUM_CUDA_MEM_KIND(id), srcDeviceId INTEGER, srcContextId INTEGER, "
        "dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER, "
        "virtualAddress INTEGER)");
    exec(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, "
        "graphNodeId INTEGER, memKind INTEGER REFERENCES ENUM_CUDA_MEM_KIND(id))");
    exec(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL)");
    exec(
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
        "rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, "
        "textId INTEGER REFERENCES StringIds(id), domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, "
        "doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, "
        "jsonText TEXT)");
    exec(
        "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL, "
        "bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT, "
        "correlationId INTEGER, streamId INTEGER)");
  }

  int64_t string(const std::string& text) {
    auto it = ids_.find(text);
    if (it != ids_.end()) return it->second;
    int64_t id = int64_t(ids_.size()) + 1;
    ids_[text] = id;
    exec("INSERT INTO StringIds VALUES (" + std::to_string(id) + ", " + quote(text) + ")");
    return id;
  }

  void session_start(int64_t utc_epoch_ns) {
    exec("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (" + std::to_string(utc_epoch_ns) + ", '', '')");
  }
  void gpu(int64_t id, const std::string& name, int64_t total_memory) {
    exec("INSERT INTO TARGET_INFO_GPU (vmId, id, name, totalMemory, smCount) VALUES (0, " + std::to_string(id) + ", " +
         quote(name) + ", " + std::to_string(total_memory) + ", 132)");
  }
  void thread_name(int64_t global_tid, const std::string& name) {
    exec("INSERT INTO ThreadNames VALUES (" + std::to_string(string(name)) + ", 0, " + std::to_string(global_tid) +
         ")");
  }
  void runtime(int64_t start, int64_t end, int64_t global_tid, int64_t correlation, const std::string& name) {
    exec("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (" +
         list({start, end, 0, global_tid, correlation, string(name), 0}) + ", NULL)");
  }
  void kernel(int64_t start, int64_t end, int64_t device, int64_t stream, int64_t correlation,
              const std::string& name) {
    int64_t n = string(name);
    exec(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, "
        "globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
        "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) VALUES (" +
        list({start, end, device, 1, stream, correlation, 0, n, n, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 1}) + ")");
  }
  // copy_kind: ENUM_CUDA_MEMCPY_OPER id; src/dst: ENUM_CUDA_MEM_KIND ids.
  void memcpy(int64_t start, int64_t end, int64_t device, int64_t stream, int64_t correlation, int64_t bytes,
              int64_t copy_kind, int64_t src_kind, int64_t dst_kind) {
    exec(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, "
        "globalPid, bytes, copyKind, srcKind, dstKind) VALUES (" +
        list({start, end, device, 1, stream, correlation, 0, bytes, copy_kind, src_kind, dst_kind}) + ")");
  }
  void memset(int64_t start, int64_t end, int64_t device, int64_t stream, int64_t correlation, int64_t bytes) {
    exec(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, "
        "globalPid, value, bytes, memKind) VALUES (" +
        list({start, end, device, 1, stream, correlation, 0, 0, bytes, 3}) + ")");
  }
  // syncType: ENUM_CUPTI_SYNC_TYPE (3 = stream synchronize).
  void sync(int64_t start, int64_t end, int64_t device, int64_t stream, int64_t correlation, int64_t sync_type) {
    exec(
        "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end, deviceId, contextId, streamId, "
        "correlationId, globalPid, syncType, eventId) VALUES (" +
        list({start, end, device, 1, stream, correlation, 0, sync_type, 0}) + ")");
  }
  // eventType: 34 mark, 59 push/pop range, 60 start/end range, 75 domain.
  void nvtx(int64_t start, int64_t end, int64_t event_type, int64_t global_tid, const std::string& text) {
    exec("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (" + list({start, end, event_type}) +
         ", " + quote(text) + ", " + std::to_string(global_tid) + ")");
  }
  // operation: 0 allocation, 1 deallocation; mem_kind as in ENUM_CUDA_MEM_KIND.
  void memory(int64_t time, int64_t device, uint64_t address, int64_t bytes, int64_t mem_kind, int64_t operation) {
    exec(
        "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, "
        "memKind, memoryOperationType) VALUES (" +
        list({time, 0, device, 1, int64_t(address), 0, bytes, mem_kind, operation}) + ")");
  }

  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string message = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(message + " in: " + sql);
    }
  }

  void close() {
    exec("COMMIT");
    sqlite3_close(db_);
    db_ = nullptr;
  }

 private:
  static std::string quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  }
  static std::string list(std::initializer_list<int64_t> values) {
    std::string out;
    for (int64_t v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
    return out;
  }

  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, int64_t> ids_;
};

// A small export: one GPU, one thread, two kernel launches under an NVTX
// range, for tests that need any real nsys export.
inline void write_small_nsys_export(const std::string& path) {
  NsysExportWriter w(path);
  w.create_schema();
  w.session_start(1700000000000000000);
  w.gpu(0, "NVIDIA H100 80GB HBM3", 85520809984);
  int64_t thread = NsysExportWriter::global_tid(10, 11);
  w.thread_name(thread, "python");
  w.runtime(1000, 1010, thread, 1, "cudaLaunchKernel_v7000");
  w.kernel(1020, 1220, 0, 7, 1, "gemm_kernel");
  w.runtime(5000, 5010, thread, 2, "cudaLaunchKernel_v7000");
  w.kernel(9020, 9220, 0, 7, 2, "gemm_kernel");
  w.nvtx(900, 9700, 59, thread, "train_step");
  w.memory(500, 0, 0x1000, 1 << 20, 3, 0);
  w.close();
}

}  // namespace loupe::test
