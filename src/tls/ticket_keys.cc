#include "ticket_keys.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "accelgate/tls/tls_context.h"

namespace accelgate::tls {
namespace {

int ex_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

Result<std::unique_ptr<TicketKeys>> TicketKeys::load(
    const std::vector<std::string>& paths, const std::vector<config::SourceLocation>& where) {
  auto keys = std::make_unique<TicketKeys>();
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    std::string at =
        i < where.size() ? where[i].file + ":" + std::to_string(where[i].line) + ": " : "";
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{at.append("cannot open ssl_session_ticket_key \"").append(path) + "\""};
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Key key{};
    if (data.size() == 48) {
      std::memcpy(key.name, data.data(), 16);
      std::memcpy(key.hmac_key, data.data() + 16, 16);
      std::memcpy(key.aes_key, data.data() + 32, 16);
      key.hmac_key_size = 16;
      key.aes256 = false;
    } else if (data.size() == 80) {
      std::memcpy(key.name, data.data(), 16);
      std::memcpy(key.hmac_key, data.data() + 16, 32);
      std::memcpy(key.aes_key, data.data() + 48, 32);
      key.hmac_key_size = 32;
      key.aes256 = true;
    } else {
      return Error{at.append("ssl_session_ticket_key \"")
                       .append(path)
                       .append("\" must be 48 or 80 bytes, not ")
                       .append(std::to_string(data.size()))};
    }
    OPENSSL_cleanse(data.data(), data.size());
    keys->keys_.push_back(key);
  }
  return keys;
}

TicketKeys::~TicketKeys() { OPENSSL_cleanse(keys_.data(), keys_.size() * sizeof(Key)); }

Status TicketKeys::install(SSL_CTX* ctx) {
  if (SSL_CTX_set_ex_data(ctx, ex_index(), this) != 1 ||
      SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, callback) != 1) {
    return Error{"cannot install session ticket keys"};
  }
  return {};
}

int TicketKeys::callback(SSL* ssl, unsigned char key_name[16], unsigned char* iv,
                         EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac, int encrypt) {
  auto* self = static_cast<TicketKeys*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ex_index()));
  if (self == nullptr || self->keys_.empty()) return -1;
  const Key* key = nullptr;
  size_t index = 0;
  if (encrypt) {
    key = &self->keys_.front();
    std::memcpy(key_name, key->name, 16);
  } else {
    for (; index < self->keys_.size(); ++index) {
      if (std::memcmp(key_name, self->keys_[index].name, 16) == 0) {
        key = &self->keys_[index];
        break;
      }
    }
    if (key == nullptr) return 0;  // unknown key: a full handshake, then a fresh ticket
  }
  EVP_CIPHER* aes =
      EVP_CIPHER_fetch(server_lib_ctx(), key->aes256 ? "AES-256-CBC" : "AES-128-CBC", nullptr);
  if (aes == nullptr) return -1;
  int iv_len = EVP_CIPHER_get_iv_length(aes);
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(
          OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(key->hmac_key), key->hmac_key_size),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_end()};
  int ok;
  if (encrypt) {
    ok = RAND_bytes_ex(server_lib_ctx(), iv, iv_len, 0) == 1 &&
         EVP_EncryptInit_ex2(cipher, aes, key->aes_key, iv, nullptr) == 1 &&
         EVP_MAC_CTX_set_params(mac, params) == 1;
  } else {
    ok = EVP_DecryptInit_ex2(cipher, aes, key->aes_key, iv, nullptr) == 1 &&
         EVP_MAC_CTX_set_params(mac, params) == 1;
  }
  EVP_CIPHER_free(aes);
  if (!ok) return -1;
  // A ticket under an older key is accepted and renewed under the current one.
  return encrypt || index == 0 ? 1 : 2;
}

}  // namespace accelgate::tls
