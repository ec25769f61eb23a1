#pragma once

// TicketKeys: session ticket keys from `ssl_session_ticket_key` files, in nginx's formats
// (48 bytes: 16 name, 16 HMAC-SHA256 key, 16 AES-128-CBC key; 80 bytes: 16 name, 32 HMAC key,
// 32 AES-256-CBC key). The first key encrypts new tickets; every key decrypts, and a ticket
// decrypted with an older key is renewed, so a fleet sharing the files can rotate keys.

#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <vector>

#include "accelgate/common/result.h"
#include "accelgate/config/config.h"

namespace accelgate::tls {

class TicketKeys {
 public:
  struct Key {
    unsigned char name[16];
    unsigned char hmac_key[32];
    unsigned char aes_key[32];
    size_t hmac_key_size;
    bool aes256;
  };

  // load reads every file; an error names the file's directive (|where|, parallel to |paths|).
  static Result<std::unique_ptr<TicketKeys>> load(const std::vector<std::string>& paths,
                                                  const std::vector<config::SourceLocation>& where);
  ~TicketKeys();

  // install makes |ctx| use these keys; the object must outlive |ctx|'s connections.
  Status install(SSL_CTX* ctx);

  const std::vector<Key>& keys() const { return keys_; }

 private:
  static int callback(SSL* ssl, unsigned char key_name[16], unsigned char* iv,
                      EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac, int encrypt);
  std::vector<Key> keys_;
};

}  // namespace accelgate::tls
